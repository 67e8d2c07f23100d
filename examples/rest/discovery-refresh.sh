#!/usr/bin/env bash
# Route: POST /discovery/refresh
# Expect: 200
# Lists the VMs of every cloud in discovery_clouds again (also done every discovery_refresh_seconds)
# and answers the new list. Each VM's id (aws-i-…) is a target id for runs and batches; a VM that
# cannot be targeted (stopped, no address) carries untargetableReason. Without discovery_clouds the
# list is empty.
#   curl -sS -X POST "$RW/discovery/refresh" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN"
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call POST /discovery/refresh
