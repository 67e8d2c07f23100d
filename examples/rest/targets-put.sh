#!/usr/bin/env bash
# Route: PUT /targets/{id}
# Expect: 201|200 201|200 201|200
# Registers (201) or replaces (200) three targets: this machine as a VM reached with
# connection "local" (what the other examples run against), an on-prem k3s cluster registered
# from its kubeconfig (examples/playbooks/k3s/), and a registered PostgreSQL database whose
# admin login is a managed account checked out just in time.
#   curl -sS -X PUT "$RW/targets/localhost" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN" \
#     -H 'content-type: application/json' -d '{"kind":"vm","cloud":"local",…}'
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

rw_call PUT /targets/localhost \
  '{"kind":"vm","cloud":"local","name":"localhost","address":"127.0.0.1","connection":"local"}'

# credentialsRef names the secret holding the kubeconfig (local mode: a key of secrets.json).
rw_call PUT /targets/lab-k3s \
  '{"kind":"cluster","cloud":"local","provider":"k3s","name":"lab k3s","credentialsRef":"lab-k3s-kubeconfig"}'

rw_call PUT /targets/orders-db \
  '{"kind":"database","cloud":"local","engine":"postgresql","name":"orders","endpoint":{"host":"db1.lan","port":5432},"source":"registered","managedAccount":"db1.lan/postgres"}'
