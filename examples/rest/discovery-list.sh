#!/usr/bin/env bash
# Route: GET /discovery
# Expect: 200
# The cached list of discovered cloud VMs, per cloud when it was last refreshed and, when the last
# refresh failed, why (the previous list is kept).
#   curl -sS "$RW/discovery" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET /discovery
