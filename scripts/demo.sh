#!/usr/bin/env bash
# Demo: starts a local ZooKeeper, 20 simulated elections whose masters get
# killed every few seconds, and the exporter; prints the URL and live metrics.
# Ctrl-C stops everything. DEMO_DURATION=60 stops after 60 s; PORT=9141 and
# ZK_PORT=2181 choose the ports.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages curl

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ZK_PORT=${ZK_PORT:-2181}
PORT=${PORT:-9141}
port_free "$ZK_PORT" || { echo "port $ZK_PORT is in use; set ZK_PORT=..." >&2; exit 1; }
port_free "$PORT" || { echo "port $PORT is in use; set PORT=..." >&2; exit 1; }

cargo build --release --locked
BIN=target/release/zk-election-exporter
work=$(mktemp -d /tmp/zk-election-demo.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "demo stopped; logs were in $work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$work/data"
cat > "$work/zoo.cfg" <<CFG
tickTime=500
dataDir=$work/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
admin.enableServer=false
maxClientCnxns=0
CFG
java -Xmx256m -Dzookeeper.log.dir="$work" -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zoo.cfg" >"$work/zookeeper.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  (exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" && printf srvr >&3 && grep -q Mode <&3) 2>/dev/null && break
  sleep 0.5
done
echo "ZooKeeper listening on 127.0.0.1:$ZK_PORT"

"$BIN" simulate --zk "127.0.0.1:$ZK_PORT" --path /wechat/bots --elections 20 --candidates 3 \
  --kill-rate 0.3 --session-timeout 3s >"$work/simulate.log" 2>&1 &
pids+=($!)
"$BIN" --zk "127.0.0.1:$ZK_PORT" --election '/wechat/bots/*' --web.listen-address "127.0.0.1:$PORT" \
  >"$work/exporter.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break
  sleep 0.5
done

cat <<MSG

zk-election-exporter is running:
  metrics:   http://127.0.0.1:$PORT/metrics
  readiness: http://127.0.0.1:$PORT/ready
20 elections under /wechat/bots; a master is killed about every 3 s (closed or abandoned).

MSG
show() {
  local m
  m=$(curl -fsS "http://127.0.0.1:$PORT/metrics")
  echo "--- $(date +%T) masters (first 5 elections):"
  grep '^zookeeper_election_master{' <<<"$m" | head -5
  echo "--- switches so far: $(grep '^zookeeper_election_master_changes_total' <<<"$m" | awk '{s+=$2} END {print s+0}')," \
    "masterless now: $(grep '^zookeeper_election_has_master' <<<"$m" | awk '$2==0' | wc -l)," \
    "session: $(grep '^zookeeper_session_state' <<<"$m" | awk '$2==1 {print $1}' | sed 's/.*state="\([a-z_]*\)".*/\1/')"
  echo "--- ZooKeeper: up=$(grep '^zookeeper_up{' <<<"$m" | awk '{print $2}')," \
    "role=$(grep '^zookeeper_server_state{' <<<"$m" | awk '$2==1 {print $1}' | sed 's/.*state="\([a-z_]*\)".*/\1/')," \
    "znodes=$(grep '^zookeeper_znode_count{' <<<"$m" | awk '{print $2}')"
}
show
end=$(( $(date +%s) + ${DEMO_DURATION:-999999999} ))
echo "(Ctrl-C to stop; live figures every 10 s)"
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 10
  show
done
