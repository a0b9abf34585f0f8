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
ensure_packages image

tag=${1:-zk-election-exporter:dev}
runtime_image=${RUNTIME_IMAGE:-debian:bookworm-slim}
binary=${BINARY:-prebuilt}
podman=(podman --runtime runc --cgroup-manager cgroupfs)

if ! "${podman[@]}" image exists "$runtime_image"; then
  root=$(mktemp -d /tmp/zk-image-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "making $runtime_image with debootstrap (no registry needed)"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$root" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; echo "debootstrap failed (log: $root.log)" >&2; exit 1; }
  rm -f "$root.log"
  # What Debian's slim image leaves out, now and for packages installed
  # later (its dpkg excludes): documentation, manuals, translations, and the
  # package caches and lists.
  cat >"$root/etc/dpkg/dpkg.cfg.d/slim" <<'EXCLUDES'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EXCLUDES
  # apt keeps no binary caches or downloaded packages (as Debian's image).
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$root"/usr/share/{man,groff,info,locale,lintian,linda}/* \
    "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/var/log/*.log "$root"/var/log/apt/*
  tar -C "$root" -c . | "${podman[@]}" import \
    --change 'CMD ["bash"]' - "$runtime_image" >/dev/null
fi

if [ "$binary" = prebuilt ]; then
  cargo build --release --locked --features kerberos --bin zk-election-exporter
fi
"${podman[@]}" build --format docker --network host \
  --build-arg BINARY="$binary" --build-arg RUNTIME_IMAGE="$runtime_image" \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  -t "$tag" -f Dockerfile .
size=$("${podman[@]}" image inspect --format '{{.Size}}' "$tag")
echo "built $tag: $((size / 1024 / 1024)) MiB"
