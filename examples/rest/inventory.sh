#!/usr/bin/env bash
# Route: GET /inventory
# Expect: 200
# The registry as an Ansible dynamic JSON inventory. To use it from ansible-playbook, save it
# and pass the file with -i (it is the --list format).
#   curl -sS "$RW/inventory" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET /inventory
