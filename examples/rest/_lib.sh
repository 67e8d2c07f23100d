# Sourced by every example here. Each example is a plain curl call; this file
# holds what they share, so that each example shows only its request.
#
#   RW                   base URL of the API (default $REMOTE_WORKER_URL, else http://127.0.0.1:8080)
#   REMOTE_WORKER_TOKEN  the bearer token (local mode prints it at first start and keeps it in
#                        .remote-worker/token)
#
# rw_call METHOD PATH [JSON BODY] [more curl arguments…] prints the response body, then a line
# "HTTP <status>", and leaves them in RW_BODY and RW_STATUS. It is exactly
#   curl -sS -X METHOD "$RW$PATH" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN" \
#        [-H 'content-type: application/json' --data-binary BODY] …
# The token travels in a header read from a file descriptor (-H @-), so it is not on the
# command line where `ps` would show it.

RW="${RW:-${REMOTE_WORKER_URL:-http://127.0.0.1:8080}}"
RW="${RW%/}"

rw_call() {
  local method="$1" path="$2" body="${3-}"
  shift 2
  [ "$#" -gt 0 ] && shift
  local args=(-sS -X "$method" "$RW$path" -w '\n%{http_code}')
  if [ -n "$body" ]; then
    args+=(-H 'content-type: application/json' --data-binary "$body")
  fi
  local response
  if [ -n "${REMOTE_WORKER_TOKEN:-}" ]; then
    response=$(printf 'Authorization: Bearer %s\n' "$REMOTE_WORKER_TOKEN" | curl "${args[@]}" -H @- "$@")
  else
    response=$(curl "${args[@]}" "$@")
  fi
  RW_STATUS="${response##*$'\n'}"
  RW_BODY="${response%$'\n'*}"
  if command -v jq >/dev/null 2>&1 && [ -n "$RW_BODY" ] && printf '%s' "$RW_BODY" | jq -e . >/dev/null 2>&1; then
    printf '%s' "$RW_BODY" | jq .
  else
    printf '%s\n' "$RW_BODY"
  fi
  echo "HTTP $RW_STATUS"
}

# json_field NAME: the first string value of "NAME" in RW_BODY (ids, cursors), without jq.
json_field() {
  printf '%s' "$RW_BODY" | grep -oE "\"$1\":\"[^\"]*\"" | head -n 1 | sed -E 's/^"[^"]*":"(.*)"$/\1/'
}

require_token() {
  if [ -z "${REMOTE_WORKER_TOKEN:-}" ]; then
    echo "set REMOTE_WORKER_TOKEN (local mode: cat .remote-worker/token)" >&2
    exit 2
  fi
}
