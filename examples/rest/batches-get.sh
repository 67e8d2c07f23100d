#!/usr/bin/env bash
# Route: GET /batches/{id}
# Expect: 200+
# A batch's rollup: runs per state, `complete` once every run has ended, failures by target.
# Usage: batches-get.sh BATCH_ID [--wait]   (--wait polls until complete)
#   curl -sS "$RW/batches/$BATCH_ID" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

id="${1:?usage: batches-get.sh BATCH_ID [--wait]}"
rw_call GET "/batches/$id"
if [ "${2:-}" = --wait ]; then
  for _ in $(seq 1 "${RW_FOLLOW_MAX_POLLS:-600}"); do
    printf '%s' "$RW_BODY" | grep -q '"complete":true' && exit 0
    sleep "${RW_FOLLOW_INTERVAL:-1}"
    rw_call GET "/batches/$id"
  done
  echo "the batch did not complete after ${RW_FOLLOW_MAX_POLLS:-600} polls" >&2
  exit 1
fi
