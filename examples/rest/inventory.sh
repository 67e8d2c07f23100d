#!/usr/bin/env bash
# Route: GET /inventory
# Expect: 200
# The inventory as Ansible's dynamic-inventory JSON (the --list format of an inventory script).
# Saved to a file, Ansible does NOT read it: `ansible-inventory -i saved.json` shows only the
# implicit localhost, because a JSON file is not an inventory source, only a script's output is.
# To use it from Ansible, give the inventory script instead, which calls this route itself:
#   export REMOTE_WORKER_URL="$RW" REMOTE_WORKER_TOKEN=…
#   ansible-inventory -i examples/inventory/remote_worker.py --list
#   ansible-playbook  -i examples/inventory/remote_worker.py site.yml --list-hosts
# (examples/inventory/README.md). The bare call:
#   curl -sS "$RW/inventory" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call GET /inventory
