#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, unit, property and
# integration tests (real ZooKeeper servers started by the test harness).
# Installs ZooKeeper and promtool from Debian when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages promtool

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
