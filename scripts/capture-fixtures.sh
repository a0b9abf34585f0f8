#!/usr/bin/env bash
# Captures real four-letter-word replies from Debian's ZooKeeper into
# tests/fixtures/<version>/: a standalone server, the leader and a follower of
# a 3-server ensemble, and a server with the default whitelist (srvr only).
# Re-run after upgrading the package; review the diff before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_packages curl

work=$(mktemp -d /tmp/zk-fixtures.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ask() { (exec 3<>"/dev/tcp/127.0.0.1/$1"; printf '%s' "$2" >&3; timeout 3 cat <&3) 2>/dev/null || true; }
start() { # dir
  java -Xmx128m -Dzookeeper.log.dir="$1" -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" >"$1/log" 2>&1 &
  pids+=($!)
}
wait_mode() { for _ in $(seq 1 120); do ask "$1" srvr | grep -q '^Mode:' && return 0; sleep 0.5; done; return 1; }

ports=(); peers=""
for id in 1 2 3; do
  ports[$id]=$(free_port)
  peers+="server.$id=127.0.0.1:$(free_port):$(free_port)"$'\n'
done
for id in 1 2 3; do
  d="$work/s$id"; mkdir -p "$d/data"; echo "$id" > "$d/data/myid"
  printf 'tickTime=200\ninitLimit=50\nsyncLimit=25\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s' \
    "$d/data" "${ports[$id]}" "$peers" > "$d/zoo.cfg"
  start "$d"
done
sa=$(free_port); d="$work/standalone"; mkdir -p "$d/data"
printf 'tickTime=200\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n' "$d/data" "$sa" > "$d/zoo.cfg"
start "$d"
dw=$(free_port); admin=$(free_port); d="$work/default"; mkdir -p "$d/data"
printf 'tickTime=200\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%s\n' "$d/data" "$dw" "$admin" > "$d/zoo.cfg"
start "$d"
for p in "${ports[1]}" "${ports[2]}" "${ports[3]}" "$sa" "$dw"; do wait_mode "$p"; done

version=$(ask "$sa" srvr | sed -n 's/^Zookeeper version: \([0-9.]*\).*/\1/p')
out="tests/fixtures/$version"
mkdir -p "$out/standalone" "$out/leader" "$out/follower" "$out/default-whitelist"
leader=""; follower=""
for id in 1 2 3; do
  mode=$(ask "${ports[$id]}" srvr | sed -n 's/^Mode: //p')
  [ "$mode" = leader ] && leader=${ports[$id]}
  [ "$mode" = follower ] && [ -z "$follower" ] && follower=${ports[$id]}
done
for cmd in mntr srvr stat ruok isro conf cons wchs envi; do
  ask "$sa" "$cmd" > "$out/standalone/$cmd.txt"
  ask "$leader" "$cmd" > "$out/leader/$cmd.txt"
  ask "$follower" "$cmd" > "$out/follower/$cmd.txt"
  ask "$dw" "$cmd" > "$out/default-whitelist/$cmd.txt"
done
mkdir -p "$out/admin"
for cmd in mntr srvr ruok isro conf; do
  curl -fsS "http://127.0.0.1:$admin/commands/$cmd" > "$out/admin/$cmd.json"
done
# A member that lost its quorum answers "not currently serving".
mkdir -p "$out/not-serving"
for id in 1 2 3; do
  [ "${ports[$id]}" = "$follower" ] || kill -9 "${pids[$((id - 1))]}" 2>/dev/null || true
done
for _ in $(seq 1 120); do
  ask "$follower" srvr | grep -q 'not currently serving' && break
  sleep 0.5
done
for cmd in mntr srvr stat ruok isro conf; do
  ask "$follower" "$cmd" > "$out/not-serving/$cmd.txt"
done
echo "fixtures written to $out"
