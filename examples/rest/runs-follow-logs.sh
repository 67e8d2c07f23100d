#!/usr/bin/env bash
# Route: GET /runs/{id}/logs
# Expect: 200+
# Follows a run's (redacted) output: each answer holds the lines after `cursor` and a
# nextCursor to pass back; `complete` turns true once the run has ended. Polls until then.
# Usage: runs-follow-logs.sh RUN_ID
#   curl -sS "$RW/runs/$RUN_ID/logs?cursor=$CURSOR" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

id="${1:?usage: runs-follow-logs.sh RUN_ID}"
cursor=""
for _ in $(seq 1 "${RW_FOLLOW_MAX_POLLS:-600}"); do
  if [ -n "$cursor" ]; then
    rw_call GET "/runs/$id/logs" "" --get --data-urlencode "cursor=$cursor" >/dev/null
  else
    rw_call GET "/runs/$id/logs" >/dev/null
  fi
  echo "HTTP $RW_STATUS"
  [ "$RW_STATUS" = 200 ] || { printf '%s\n' "$RW_BODY" >&2; exit 1; }
  if command -v jq >/dev/null 2>&1; then
    printf '%s' "$RW_BODY" | jq -r '.lines[] | "\(.stream): \(.text)"'
  else
    printf '%s\n' "$RW_BODY"
  fi
  # The run has ended and this page was empty: everything has been read.
  if printf '%s' "$RW_BODY" | grep -q '"complete":true' && printf '%s' "$RW_BODY" | grep -q '"lines":\[\]'; then
    exit 0
  fi
  cursor="$(json_field nextCursor)"
  sleep "${RW_FOLLOW_INTERVAL:-1}"
done
echo "gave up following after ${RW_FOLLOW_MAX_POLLS:-600} polls" >&2
exit 1
