#!/usr/bin/env bash
# Makes every release artefact of VERSION from a clean checkout, into
# dist/VERSION/:
#   zk-election-exporter-VERSION.linux-amd64.tar.gz   the binary (with
#       Kerberos), LICENSE, THIRD-PARTY-LICENSES, README, CHANGELOG, docs,
#       examples, the systemd unit, the alert rules and the dashboards
#       (scripts/tarball.sh)
#   zk-election-exporter_VERSION_amd64.deb            the Debian package
#       (scripts/package-deb.sh)
#   zk-election-exporter-VERSION.image.tar            the OCI image
#       (scripts/image.sh; `podman load -i` or `docker load -i`)
#   zk-election-exporter-VERSION.cdx.json             CycloneDX SBOM of the
#       crates the binary is built from
#   SHA256SUMS
#
# Usage: scripts/release.sh VERSION   (VERSION is Cargo.toml's, and
# CHANGELOG.md has a section for it)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
version=${1:?usage: scripts/release.sh VERSION}
crate_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ "$version" = "$crate_version" ] ||
  { echo "VERSION $version is not Cargo.toml's version $crate_version: change one" >&2; exit 1; }
grep -q "^## \[$version\]" CHANGELOG.md ||
  { echo "CHANGELOG.md has no section \"## [$version]\": write it first" >&2; exit 1; }
[ -z "$(git status --porcelain --untracked-files=normal -- . ':!dist')" ] ||
  { echo "the checkout has changes: release from a clean one (git status)" >&2; exit 1; }

ensure_packages build gssapi image
ensure_cargo_tools cargo-deny cargo-cyclonedx
cargo deny --locked check licenses

out="dist/$version"
rm -rf "$out"
mkdir -p "$out"
# The Debian package builds the release binary (with Kerberos) first.
scripts/package-deb.sh "$out" >/dev/null

scripts/tarball.sh "$out" >/dev/null

tag="zk-election-exporter:$version"
scripts/image.sh "$tag" >/dev/null
podman --runtime runc --cgroup-manager cgroupfs save --format docker-archive \
  -o "$out/zk-election-exporter-$version.image.tar" "$tag" >/dev/null

cargo cyclonedx --format json --features kerberos --target x86_64-unknown-linux-gnu --no-build-deps \
  --override-filename "zk-election-exporter-$version.cdx" >/dev/null
mv "zk-election-exporter-$version.cdx.json" "$out/"

(cd "$out" && sha256sum -- *.tar.gz *.deb *.image.tar *.cdx.json >SHA256SUMS)
echo "release $version in $out:"
(cd "$out" && ls -l --time-style=+ -- *)
