#!/usr/bin/env bash
# Builds the shipped Dockerfile into an OCI image with Debian's podman, no
# daemon and no registry needed:
#   scripts/image.sh [TAG]        (default zk-election-exporter:dev)
#
# - The runtime base (debian:bookworm-slim) is taken from local storage, or
#   made with debootstrap (minbase) and imported under that name.
# - The builder stage needs rust:1-slim-bookworm, which only a registry
#   serves: where none is reachable (as here), the image is built with
#   BINARY=prebuilt from the release binary cargo builds on the host, the
#   same program the builder stage would compile (same Cargo.lock, --locked).
#   Set BINARY=build to compile in the image where the registry is reachable.
# - The image is built in Docker format so its HEALTHCHECK is kept (OCI
#   drops it).
#
# Podman runs containers here with --runtime runc --cgroup-manager cgroupfs
# and explicit ulimits (crun refuses these hybrid cgroups); tests/image.rs
# runs the image that way as a user would: non-root, read-only root, --zk at
# a test ZooKeeper.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages build gssapi image

tag=${1:-zk-election-exporter:dev}
runtime_image=${RUNTIME_IMAGE:-debian:bookworm-slim}
binary=${BINARY:-prebuilt}
podman=(podman --runtime runc --cgroup-manager cgroupfs)

ensure_debian_base "$runtime_image"

if [ "$binary" = prebuilt ]; then
  cargo build --release --locked --features kerberos --bin zk-election-exporter
  python3 scripts/third-party-licenses.py --features kerberos >target/release/THIRD-PARTY-LICENSES
fi
"${podman[@]}" build --format docker --network host \
  --build-arg BINARY="$binary" --build-arg RUNTIME_IMAGE="$runtime_image" \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  -t "$tag" -f Dockerfile .
size=$("${podman[@]}" image inspect --format '{{.Size}}' "$tag")
echo "built $tag: $((size / 1024 / 1024)) MiB"
