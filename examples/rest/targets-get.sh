#!/usr/bin/env bash
# Route: GET /targets/{id}
# Expect: 200
# One target. Usage: targets-get.sh [TARGET_ID]   (default localhost)
#   curl -sS "$RW/targets/localhost" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET "/targets/${1:-localhost}"
