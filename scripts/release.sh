#!/usr/bin/env bash
# Makes every release artefact of VERSION from a clean checkout, into
# dist/VERSION/:
#   zk-election-exporter-VERSION.linux-amd64.tar.gz   the binary (with
#       Kerberos), LICENSE, THIRD-PARTY-LICENSES, README, CHANGELOG, docs,
#       examples, the systemd unit, the alert rules and the dashboards
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
name="zk-election-exporter-$version.linux-amd64"

# The Debian package builds the release binary (with Kerberos) first.
scripts/package-deb.sh "$out" >/dev/null

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/systemd" "$dir/docs"
install -m 0755 target/release/zk-election-exporter "$dir/"
strip --strip-unneeded "$dir/zk-election-exporter"
python3 scripts/third-party-licenses.py --features kerberos >"$dir/THIRD-PARTY-LICENSES"
cp LICENSE README.md CHANGELOG.md "$dir/"
cp -r examples dashboards "$dir/"
mkdir -p "$dir/alerts" && cp alerts/*.yml "$dir/alerts/"
cp deploy/systemd/zk-election-exporter.service deploy/systemd/zk-election-exporter.env "$dir/systemd/"
cp docs/*.md "$dir/docs/"
# Reproducible: the files' times are the last commit's, owners are root.
epoch=$(git log -1 --format=%ct)
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -C "$stage" -czf "$out/$name.tar.gz" "$name"

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
