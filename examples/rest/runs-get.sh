#!/usr/bin/env bash
# Route: GET /runs/{id}
# Expect: 200
# One run: state, history with timestamps, timings, runner, exit code, reason.
# Usage: runs-get.sh RUN_ID
#   curl -sS "$RW/runs/$RUN_ID" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET "/runs/${1:?usage: runs-get.sh RUN_ID}"
