#!/usr/bin/env bash
# Route: POST /runs/{id}/cancel
# Expect: 202
# Requests cancellation; answered with the run (cancelRequested: true). A queued run is
# cancelled at once; a running one is stopped (SIGTERM, then SIGKILL after the grace period)
# and ends "cancelled". Cancelling a run that has already ended answers 409 invalid-transition
# and changes nothing.
# Usage: runs-cancel.sh RUN_ID
#   curl -sS -X POST "$RW/runs/$RUN_ID/cancel" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call POST "/runs/${1:?usage: runs-cancel.sh RUN_ID}/cancel"
