#!/usr/bin/env bash
# Hunts flaky tests: runs the whole suite (the unit, property and
# integration tests scripts/test.sh runs) RUNS times in a row while every
# CPU is kept busy, as CI's two cores are when other JVMs run beside it.
#   scripts/flake-hunt.sh [RUNS] [cargo test filters...]
#   FLAKE_LOAD=80 (per cent of each CPU to burn; 0 for none)
# Prints one line per run and a summary; exits 1 if any run failed. Logs of
# failed runs are kept (their paths are printed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages build promtool alertmanager curl chromium jsonnet systemd-analyze patroni clickhouse databases image gssapi kerberos
ensure_pypi_systems
ensure_pip_tools
ensure_npm_tools
runs=${1:-5}
shift || true
load=${FLAKE_LOAD:-80}
cpus=$(nproc)
logs=$(mktemp -d)
burners=()
stop_load() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_load EXIT

# Build first, unloaded: the hunt is for the tests, not the compiler.
cargo test --locked --features kerberos --no-run --lib --bins --tests >/dev/null 2>&1 ||
  cargo test --locked --features kerberos --no-run --lib --bins --tests

if [ "$load" -gt 0 ]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$cpus" --cpu-load "$load" --quiet &
    burners+=($!)
  else
    # Plain busy loops when Debian's stress-ng is missing: full load.
    for _ in $(seq "$cpus"); do
      (while :; do :; done) &
      burners+=($!)
    done
  fi
fi
echo "flake hunt: $runs runs of the whole suite, $cpus CPUs kept ${load}% busy ($(uname -m), $(nproc) cores)"

failed=0
for run in $(seq "$runs"); do
  log="$logs/run-$run.log"
  started=$(date +%s)
  set +e
  cargo test --locked --features kerberos --no-fail-fast --lib --bins --tests "$@" >"$log" 2>&1
  status=$?
  set -e
  took=$(( $(date +%s) - started ))
  counts=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
                END { printf "%d passed, %d failed", p, f }' "$log")
  if [ "$status" -eq 0 ]; then
    echo "run $run: clean, $counts in ${took}s"
    rm -f "$log"
  else
    failed=$((failed + 1))
    echo "run $run: FAILED, $counts in ${took}s; log: $log"
    grep -E '^test .* FAILED$|panicked at' "$log" | head -20 | sed 's/^/  /'
  fi
done
echo "flake hunt: $((runs - failed)) of $runs runs clean"
[ "$failed" -eq 0 ]
