#!/usr/bin/env bash
# Route: POST /batches/{id}/retry
# Expect: 202
# Re-submits the same request for the targets whose runs ended failed, refused, timed_out or
# cancelled, as a new batch (retryOf: the old id). 409 when no run qualifies.
# Usage: batches-retry.sh BATCH_ID
#   curl -sS -X POST "$RW/batches/$BATCH_ID/retry" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call POST "/batches/${1:?usage: batches-retry.sh BATCH_ID}/retry"
echo "batch id: $(json_field batchId)"
