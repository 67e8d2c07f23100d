#!/usr/bin/env bash
# Route: GET /assets
# Expect: 200
# Every asset on the active storage backend, with its type (playbook, script, PowerShell, RPM, DEB).
#   curl -sS "$RW/assets" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET /assets
