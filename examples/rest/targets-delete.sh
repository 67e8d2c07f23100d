#!/usr/bin/env bash
# Route: DELETE /targets/{id}
# Expect: 204
# Removes a target from the registry (runs that used it keep their record).
# Usage: targets-delete.sh TARGET_ID
#   curl -sS -X DELETE "$RW/targets/lab-k3s" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call DELETE "/targets/${1:?usage: targets-delete.sh TARGET_ID}"
