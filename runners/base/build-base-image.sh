#!/usr/bin/env bash
# Build the Debian base image the runner images and the container tests start
# from, without an image registry: a minbase rootfs from Debian's mirror
# (debootstrap, about 70 s) imported as an image. Idempotent: an image that
# already exists is kept. Concurrent callers wait for one build (flock).
#
#   runners/base/build-base-image.sh [IMAGE]     # default localhost/debian:bookworm
#
# Environment: CONTAINER_ENGINE (default podman; docker works too),
# DEBIAN_MIRROR (default http://deb.debian.org/debian), SUITE (default bookworm).
set -euo pipefail

image=${1:-localhost/debian:bookworm}
engine=${CONTAINER_ENGINE:-podman}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${SUITE:-bookworm}

exists() { "$engine" image inspect "$image" >/dev/null 2>&1; }

exec 9>"${TMPDIR:-/tmp}/remote-worker-base-image.lock"
flock 9
if exists; then
  echo "base image $image already exists"
  exit 0
fi

command -v debootstrap >/dev/null || { echo "debootstrap is not installed (Debian: apt-get install debootstrap)" >&2; exit 1; }
rootfs=$(mktemp -d "${TMPDIR:-/tmp}/rw-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT

started=$(date +%s)
echo "building base image $image: debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -n 20 "$rootfs.log" >&2
  rm -f "$rootfs.log"
  exit 1
}
rm -f "$rootfs.log"
# What a slim image leaves out: package caches and lists (apt-get update fetches them again).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | "$engine" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base image $image built in $(( $(date +%s) - started )) s ($("$engine" image inspect --format '{{.Size}}' "$image") bytes)"
