#!/usr/bin/env bash
# Builds the release tarball of this checkout, from the release binary
# built with Kerberos:
#   scripts/tarball.sh OUTDIR   -> OUTDIR/zk-election-exporter-VERSION.linux-amd64.tar.gz
# holding the binary, LICENSE, THIRD-PARTY-LICENSES, README, CHANGELOG,
# docs, examples, the systemd unit, the alert rules and the dashboards.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
out=${1:?usage: scripts/tarball.sh OUTDIR}
ensure_packages build gssapi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
name="zk-election-exporter-$version.linux-amd64"
cargo build --release --locked --features kerberos --bin zk-election-exporter

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/systemd" "$dir/docs" "$dir/alerts"
install -m 0755 target/release/zk-election-exporter "$dir/"
strip --strip-unneeded "$dir/zk-election-exporter"
python3 scripts/third-party-licenses.py --features kerberos >"$dir/THIRD-PARTY-LICENSES"
cp LICENSE README.md CHANGELOG.md "$dir/"
cp -r examples dashboards "$dir/"
cp alerts/*.yml "$dir/alerts/"
cp deploy/systemd/zk-election-exporter.service deploy/systemd/zk-election-exporter.env "$dir/systemd/"
cp docs/*.md "$dir/docs/"
# Reproducible: the files' times are the last commit's, owners are root.
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
