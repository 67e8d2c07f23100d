#!/usr/bin/env bash
# Route: GET /openapi.json
# Expect: 200
# The API contract (OpenAPI 3.1, generated from the zod schemas the handlers validate with),
# saved to ./openapi.json (or $RW_OPENAPI_OUT). Public: no token needed.
#   curl -sS "$RW/openapi.json" -o openapi.json
set -euo pipefail
. "$(dirname "$0")/_lib.sh"

out="${RW_OPENAPI_OUT:-openapi.json}"
rw_call GET /openapi.json >/dev/null
printf '%s\n' "$RW_BODY" > "$out"
echo "saved the contract to $out ($(wc -c < "$out") bytes); its paths:"
grep -oE '"/[A-Za-z0-9_./{}-]*":' "$out" | sort -u | tr -d '":' | sed 's/^/  /'
echo "HTTP $RW_STATUS"
