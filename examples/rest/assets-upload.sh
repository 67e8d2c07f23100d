#!/usr/bin/env bash
# Route: POST /assets
# Expect: 201|200
# Uploads a playbook, script or package to the active storage backend: 201 when new, 200 when
# it replaced an asset (overwrite: true). The content travels base64-encoded in JSON.
#   RW_ASSET_FILE  the local file (default examples/playbooks/hello/site.yml)
#   RW_ASSET_PATH  its path on the asset store (default uploads/site.yml)
#   curl -sS -X POST "$RW/assets" -H "Authorization: Bearer $REMOTE_WORKER_TOKEN" \
#     -H 'content-type: application/json' -d '{"path":"uploads/site.yml","contentBase64":"…","overwrite":true}'
set -euo pipefail
. "$(dirname "$0")/_lib.sh"
require_token

file="${RW_ASSET_FILE:-$(dirname "$0")/../playbooks/hello/site.yml}"
path="${RW_ASSET_PATH:-uploads/site.yml}"
content=$(base64 < "$file" | tr -d '\n')
rw_call POST /assets "{\"path\":\"$path\",\"contentBase64\":\"$content\",\"overwrite\":true}"
