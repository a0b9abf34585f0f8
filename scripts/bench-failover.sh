#!/usr/bin/env bash
# Failover of each real system, seen by the system itself (its own status)
# and by the agent, side by side: runs the tests that start Patroni,
# ClickHouse, Spark and Flink with ZKEE_FAILOVER_LOG set and prints the
# table docs/benchmarks.md records. Seconds from the stop to the first
# poll (every 50 ms) that showed the new leader. Usage: scripts/bench-failover.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages curl patroni clickhouse
ensure_pypi_systems
runs="${1:-3}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for _ in $(seq "$runs"); do
  ZKEE_FAILOVER_LOG="$log" cargo test --release --locked -q \
    --test patroni --test clickhouse --test spark --test flink >/dev/null
done
echo "| system, stop | sessions | the system's own view (s) | the agent (s) |"
echo "| --- | --- | --- | --- |"
sort "$log" | awk -F'\t' '
  { key = $1 "\t" $2; sys[key] = sys[key] " " $3; agent[key] = agent[key] " " $4; order[key] = 1 }
  END { for (k in order) { split(k, p, "\t"); printf "| %s | %s | %s | %s |\n", p[1], p[2], sys[k], agent[k] } }' | sort
