#!/usr/bin/env bash
# Builds the Debian package of this checkout with Debian's own tools
# (dpkg-deb, dpkg-shlibdeps), from the release binary built with Kerberos:
#   scripts/package-deb.sh OUTDIR    -> OUTDIR/zk-election-exporter_VERSION_amd64.deb
#
# What it installs:
#   /usr/bin/zk-election-exporter
#   /lib/systemd/system/zk-election-exporter.service  (the shipped unit, run
#       as the package's system user instead of a dynamic one)
#   /etc/zk-election-exporter/config.toml   conffile: names no cluster yet
#   /etc/default/zk-election-exporter       conffile: extra flags
#   /usr/share/zk-election-exporter/        alert rules and dashboards
#   /usr/share/doc/zk-election-exporter/    README, docs, examples, licences
# postinst creates the system user zk-election-exporter and neither enables
# nor starts the service: it has nothing to watch until configured.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
out=${1:?usage: scripts/package-deb.sh OUTDIR}
ensure_packages build gssapi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
cargo build --release --locked --features kerberos --bin zk-election-exporter
bin=target/release/zk-election-exporter

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
doc="$root/usr/share/doc/zk-election-exporter"
install -D -m 0755 "$bin" "$root/usr/bin/zk-election-exporter"
strip --strip-unneeded "$root/usr/bin/zk-election-exporter"
install -d "$root/lib/systemd/system" "$root/etc/zk-election-exporter" "$root/etc/default" \
  "$root/usr/share/zk-election-exporter" "$doc/examples"
# The shipped unit runs under a dynamic user from /usr/local/bin; the
# package has its own user (the files it owns survive a restart) and
# binary path.
sed -e 's|^ExecStart=/usr/local/bin/|ExecStart=/usr/bin/|' \
  -e 's|^DynamicUser=yes$|User=zk-election-exporter\nGroup=zk-election-exporter|' \
  -e '/^#   install /d' -e '/^#   systemctl daemon-reload/d' \
  deploy/systemd/zk-election-exporter.service >"$root/lib/systemd/system/zk-election-exporter.service"
grep -q '^User=zk-election-exporter$' "$root/lib/systemd/system/zk-election-exporter.service"
install -m 0644 deploy/debian/config.toml "$root/etc/zk-election-exporter/config.toml"
install -m 0644 deploy/systemd/zk-election-exporter.env "$root/etc/default/zk-election-exporter"
cp -r alerts dashboards "$root/usr/share/zk-election-exporter/"
install -m 0644 README.md CHANGELOG.md docs/configuration.md docs/metrics.md docs/runbooks.md \
  docs/alerts.md docs/migrating.md "$doc/"
install -m 0644 examples/*.toml "$doc/examples/"
# Debian's copyright file: the project's licence, then what the binary
# links (scripts/third-party-licenses.py).
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: zk-election-exporter"
  echo
  echo "Files: *"
  echo "License: Apache-2.0"
  echo " See /usr/share/common-licenses/Apache-2.0."
  echo
  echo "Comment: the crates linked into /usr/bin/zk-election-exporter follow, each"
  echo " with its licence as it ships it."
  echo
  python3 scripts/third-party-licenses.py --features kerberos | sed 's/^/ /; s/^ $/ ./'
} >"$doc/copyright"

# What the binary links, as Debian names it.
mkdir -p "$work/src/debian"
printf 'Source: zk-election-exporter\n\nPackage: zk-election-exporter\nArchitecture: amd64\n' >"$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/zk-election-exporter" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "dpkg-shlibdeps found no dependencies" >&2; exit 1; }

# adduser makes the system user; procps has /bin/kill, which the unit's
# ExecReload runs (systemctl reload).
install -d "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: zk-election-exporter
Version: $version
Architecture: amd64
Maintainer: zk-election-exporter maintainers <https://github.com/zk-election-exporter/zk-election-exporter/issues>
Installed-Size: $size
Depends: $depends, adduser, procps
Section: net
Priority: optional
Homepage: https://github.com/zk-election-exporter/zk-election-exporter
Description: Prometheus exporter and alerting agent for ZooKeeper elections
 Watches leader elections, locks and service registries on Apache
 ZooKeeper and exports who is master of each election, how often
 mastership moved, masterless time, candidates, locks and registry
 membership; polls every member's four-letter words; detects ghost
 masters and pushes its own alerts to Alertmanager.
CONTROL
printf '/etc/zk-election-exporter/config.toml\n/etc/default/zk-election-exporter\n' >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd zk-election-exporter >/dev/null; then
    adduser --system --group --no-create-home --home /nonexistent \
      --gecos "zk-election-exporter" zk-election-exporter >/dev/null
  fi
  # The configuration may hold credentials: readable by the service only.
  chgrp zk-election-exporter /etc/zk-election-exporter/config.toml
  chmod 0640 /etc/zk-election-exporter/config.toml
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
  fi
  # Not enabled, not started: it has nothing to watch until configured.
  if [ -z "$2" ]; then
    echo "zk-election-exporter: name your ZooKeeper clusters in /etc/zk-election-exporter/config.toml, then: systemctl enable --now zk-election-exporter"
  elif [ -d /run/systemd/system ] && systemctl is-active --quiet zk-election-exporter; then
    systemctl restart zk-election-exporter || true
  fi
fi
POSTINST
cat >"$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop zk-election-exporter >/dev/null 2>&1 || true
fi
PRERM
cat >"$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
POSTRM
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
mkdir -p "$out"
deb="$out/zk-election-exporter_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
