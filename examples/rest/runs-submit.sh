#!/usr/bin/env bash
# Route: POST /runs
# Expect: 202
# Submits one run: 202 with the run (state "queued"), or 200 with state "refused" and the reason.
# The Idempotency-Key header makes a retried request return the same run instead of a second one.
#   RW_KIND        run kind (default vm)           RW_TARGET  target id (default localhost)
#   RW_ASSET       asset path (default hello/site.yml)
#   RW_EXTRA_VARS  JSON object (default {"greeting":"hello from examples/rest"})
#   curl -sS -X POST "$RW/runs" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN" \
#     -H 'content-type: application/json' -H "Idempotency-Key: $key" \
#     -d '{"kind":"vm","targetId":"localhost","asset":"hello/site.yml","extraVars":{"greeting":"hi"}}'
# A bound secret is one more field: "secrets": [{"var": "api_token", "secret": "<name>"}].
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

kind="${RW_KIND:-vm}"
target="${RW_TARGET:-localhost}"
asset="${RW_ASSET:-hello/site.yml}"
default_extra='{"greeting":"hello from examples/rest"}'
extra="${RW_EXTRA_VARS:-$default_extra}"
key="${RW_IDEMPOTENCY_KEY:-examples-$(date +%s)-$$}"

rw_call POST /runs \
  "{\"kind\":\"$kind\",\"targetId\":\"$target\",\"asset\":\"$asset\",\"extraVars\":$extra}" \
  -H "Idempotency-Key: $key"
echo "run id: $(json_field id)"
