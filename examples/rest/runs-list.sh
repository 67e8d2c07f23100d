#!/usr/bin/env bash
# Route: GET /runs
# Expect: 200
# Runs, newest first. Filters: state, batchId; page with limit and the nextCursor of the answer.
# Usage: runs-list.sh [STATE]   e.g. runs-list.sh failed
#   curl -sS "$RW/runs?state=failed&limit=10" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET "/runs?limit=10${1:+&state=$1}"
