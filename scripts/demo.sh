#!/usr/bin/env bash
# Demo: starts a local ZooKeeper, 20 simulated elections whose masters get
# killed every few seconds, the exporter, Prometheus with the shipped alert
# rules and Alertmanager; prints their URLs and live figures. One election is
# left without candidates: the agent pushes ZooKeeperElectionNoMaster to
# Alertmanager within seconds, the Prometheus rule follows after a minute.
# Ctrl-C stops everything. DEMO_DURATION=60 stops after 60 s; PORT=9141,
# ZK_PORT=2181, PROM_PORT=9090 and AM_PORT=9093 choose the ports.
set -euo pipefail
# Started in the background by a shell without job control (`scripts/demo.sh &`
# in a script, nohup, CI), bash inherits SIGINT ignored and may not trap it:
# `kill -INT <pid>` would do nothing. Start again with SIGINT at its default.
if [ -z "${ZK_DEMO_SIGINT:-}" ] && [ -n "$(trap -p INT)" ]; then
  export ZK_DEMO_SIGINT=1
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' "$0" "$@"
fi
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages build curl promtool alertmanager

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ZK_PORT=${ZK_PORT:-2181}
PORT=${PORT:-9141}
PROM_PORT=${PROM_PORT:-9090}
AM_PORT=${AM_PORT:-9093}
for p in ZK_PORT PORT PROM_PORT AM_PORT; do
  port_free "${!p}" || { echo "port ${!p} is in use; set $p=..." >&2; exit 1; }
done

cargo build --release --locked
BIN=target/release/zk-election-exporter
work=$(mktemp -d /tmp/zk-election-demo.XXXXXX)
pids=()
sleeper=
cleanup() {
  for pid in "${pids[@]}" $sleeper; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "demo stopped; logs were in $work"
}
trap cleanup EXIT
# `kill -INT <pid>` reaches bash alone, not the sleep it waits on: waits are
# `sleep & wait`, which a signal interrupts, so the trap runs at once.
trap 'stopping=1; exit 130' INT TERM
stopping=0

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
  --kill-rate 0.3 --session-timeout 10s >"$work/simulate.log" 2>&1 &
pids+=($!)
# Node-style elections beside them: whoever creates /services/svc_N/leader
# (EPHEMERAL) is master, as Kafka's /controller or HBase's master.
"$BIN" simulate --zk "127.0.0.1:$ZK_PORT" --path /services --style node --elections 3 --candidates 2 \
  --kill-rate 0.1 --session-timeout 10s >"$work/simulate-node.log" 2>&1 &
pids+=($!)
# Two kazoo-style locks under /jobs, handed over about every half second.
"$BIN" simulate --zk "127.0.0.1:$ZK_PORT" --path /jobs --style lock --elections 2 --candidates 3 \
  >"$work/simulate-lock.log" 2>&1 &
pids+=($!)
cat > "$work/exporter.toml" <<CFG
[[clusters]]
name = "demo"
servers = ["127.0.0.1:$ZK_PORT"]

[[clusters.elections]]
path = "/wechat/bots/*"

[[clusters.elections]]
path = "/services/*/leader"
style = "node"

[[clusters.locks]]
path = "/jobs/*"

[alerting]
alertmanagers = ["http://127.0.0.1:$AM_PORT"]
no_master_for = "5s"
CFG
"$BIN" --config "$work/exporter.toml" --web.listen-address "127.0.0.1:$PORT" \
  >"$work/exporter.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break
  sleep 0.5
done
# An election nobody competes in: both alert paths end to end.
/usr/share/zookeeper/bin/zkCli.sh -server "127.0.0.1:$ZK_PORT" create /wechat/bots/bot_orphan >/dev/null 2>&1 || true
orphaned=$(date +%s)

# The demo's Alertmanager carries the shipped inhibit rules.
{ printf 'route:\n  receiver: demo\n  group_wait: 5s\nreceivers:\n  - name: demo\n'; cat alerts/inhibit_rules.yml; } > "$work/alertmanager.yml"
prometheus-alertmanager --config.file="$work/alertmanager.yml" --storage.path="$work/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >"$work/alertmanager.log" 2>&1 &
pids+=($!)
cp alerts/zookeeper.rules.yml "$work/rules.yml"
cat > "$work/prometheus.yml" <<CFG
global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files: [rules.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ['127.0.0.1:$AM_PORT']}]
scrape_configs:
  - job_name: zk-election-exporter
    static_configs: [{targets: ['127.0.0.1:$PORT']}]
CFG
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$work/prometheus.log" 2>&1 &
pids+=($!)

cat <<MSG

zk-election-exporter is running:
  metrics:      http://127.0.0.1:$PORT/metrics
  readiness:    http://127.0.0.1:$PORT/ready
  status page:  http://127.0.0.1:$PORT/
  timeline:     http://127.0.0.1:$PORT/api/v1/events
  trees:        http://127.0.0.1:$PORT/api/v1/trees
  Prometheus:   http://127.0.0.1:$PROM_PORT/api/v1/alerts   (the shipped rules; Debian's
                Prometheus has no web UI: /api/v1/rules, /api/v1/query?query=... answer)
  Alertmanager: http://127.0.0.1:$AM_PORT
20 elections under /wechat/bots; a master is killed about every 3 s (closed or abandoned).
3 node-style elections under /services/*/leader; a master is killed about every 10 s.
2 locks under /jobs/*, each held by one of three contenders and handed over about every half second.
An abandoned master is a ghost until ZooKeeper expires its 10 s session, then the standby takes over.
/wechat/bots/bot_orphan has no candidate: the agent pushes ZooKeeperElectionNoMaster to Alertmanager
after about 5 s (no_master_for); the Prometheus rule (for: 1m) fires after about a minute, and
Alertmanager merges the two copies into one alert. Were bot_orphan a retired account, one line
would stop it paging: exclude = ["/wechat/bots/bot_orphan"] under its [[clusters.elections]].

MSG
show() {
  local m
  # Ctrl-C reaches the whole process group: the exporter may be gone first.
  m=$(curl -fsS "http://127.0.0.1:$PORT/metrics" 2>/dev/null) || {
    [ "$stopping" = 1 ] || echo "--- $(date +%T) the exporter does not answer (see $work/exporter.log)"
    return 0
  }
  echo "--- $(date +%T) masters (first 5 sequential elections, then the node-style ones):"
  grep '^zookeeper_election_master{' <<<"$m" | grep -v '/leader"' | head -5
  grep '^zookeeper_election_master{' <<<"$m" | grep '/leader"' 
  echo "--- switches so far: $(grep '^zookeeper_election_master_changes_total' <<<"$m" | awk '{s+=$2} END {print s+0}')," \
    "masterless now: $(grep '^zookeeper_election_has_master' <<<"$m" | awk '$2==0' | wc -l)," \
    "ghost masters now: $(grep '^zookeeper_election_master_session_connected' <<<"$m" | awk '$2==0' | wc -l)," \
    "lock hand-overs: $(grep '^zookeeper_lock_acquisitions_total' <<<"$m" | awk '{s+=$2} END {print s+0}')," \
    "session: $(grep '^zookeeper_session_state' <<<"$m" | awk '$2==1 {print $1}' | sed 's/.*state="\([a-z_]*\)".*/\1/')"
  echo "--- alerts in Alertmanager: $(curl -fsS "http://127.0.0.1:$AM_PORT/api/v2/alerts" 2>/dev/null |
    python3 -c 'import json,sys; print(", ".join(sorted({a["labels"]["alertname"] for a in json.load(sys.stdin)})) or "none yet")' 2>/dev/null)"
  echo "--- $(( $(date +%s) - orphaned )) s after bot_orphan lost its master:" \
    "pushed by the agent: $(curl -fsS "http://127.0.0.1:$PORT/api/v1/status" 2>/dev/null |
      python3 -c 'import json,sys; print(", ".join(sorted({a["alertname"] for a in json.load(sys.stdin)["pushed_alerts"]})) or "none")' 2>/dev/null);" \
    "firing by the rules: $(curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/alerts" 2>/dev/null |
      python3 -c 'import json,sys; print(", ".join(sorted({a["labels"]["alertname"] for a in json.load(sys.stdin)["data"]["alerts"] if a["state"] == "firing"})) or "none yet")' 2>/dev/null)"
  echo "--- latest switches: $(curl -fsS "http://127.0.0.1:$PORT/api/v1/events?kind=switch,masterless_started&limit=3" 2>/dev/null |
    python3 -c 'import json,sys; print("; ".join("%s %s %s->%s %s" % (e["at"][11:19], e.get("election", ""), (e.get("from") or {}).get("identity", ""), (e.get("to") or {}).get("identity", ""), e.get("cause") or "") for e in json.load(sys.stdin)["events"]) or "none yet")' 2>/dev/null)"
  echo "--- ZooKeeper: up=$(grep '^zookeeper_up{' <<<"$m" | awk '{print $2}')," \
    "role=$(grep '^zookeeper_server_state{' <<<"$m" | awk '$2==1 {print $1}' | sed 's/.*state="\([a-z_]*\)".*/\1/')," \
    "znodes=$(grep '^zookeeper_znode_count{' <<<"$m" | awk '{print $2}')"
}
show
end=$(( $(date +%s) + ${DEMO_DURATION:-999999999} ))
echo "(Ctrl-C to stop; live figures every 10 s)"
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 10 &
  sleeper=$!
  wait "$sleeper" || true
  show
done
