#!/usr/bin/env bash
# Route: POST /batches
# Expect: 202
# One asset against 1–50 targets of one kind: one run per target, all carrying the batch id.
# A selection problem (mixed kinds, an untargetable row, more than 50) refuses the whole request
# (422) before any run exists; a target the runner rules refuse comes back in "failed" while the
# rest run. Usage: batches-submit.sh [TARGET_ID…]   (default localhost)
#   RW_KIND (default vm), RW_ASSET (default hello/site.yml), RW_EXTRA_VARS (JSON object)
#   curl -sS -X POST "$RW/batches" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN" \
#     -H 'content-type: application/json' \
#     -d '{"kind":"vm","targetIds":["web-01","web-02"],"asset":"scripts/disk-report.sh"}'
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

kind="${RW_KIND:-vm}"
asset="${RW_ASSET:-hello/site.yml}"
no_vars='{}'
extra="${RW_EXTRA_VARS:-$no_vars}"
targets=""
for t in "${@:-localhost}"; do targets="${targets:+$targets,}\"$t\""; done

rw_call POST /batches "{\"kind\":\"$kind\",\"targetIds\":[$targets],\"asset\":\"$asset\",\"extraVars\":$extra}"
echo "batch id: $(json_field batchId)"
