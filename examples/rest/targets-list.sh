#!/usr/bin/env bash
# Route: GET /targets
# Expect: 200
# The target registry; rows that can never be a target carry the reason.
#   curl -sS "$RW/targets" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET /targets
