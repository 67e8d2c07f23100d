#!/usr/bin/env bash
# Route: GET /healthz
# Expect: 200
# Liveness; the one route (with /openapi.json) that needs no token.
#   curl -sS "$RW/healthz"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"

rw_call GET /healthz
