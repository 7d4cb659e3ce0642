#!/usr/bin/env bash
# Brings up Redis on loopback for trying @ctx/redis by hand (tests and the benchmark start their own
# servers through src/redis-servers.ts; they do not need this script).
#
#   tooling/redis-test-server/redis-up.sh single  DIR [PORT]   one server (default port 6390)
#   tooling/redis-test-server/redis-up.sh cluster DIR [PORT]   a 3-node cluster on PORT, PORT+1, PORT+2 (default 7000)
#   tooling/redis-test-server/redis-up.sh stop    DIR          stops every server started in DIR, by the pid in its pidfile
#
# Needs redis-server and redis-cli: apt-get update && apt-get install -y redis-server
set -euo pipefail

mode=${1:-}
dir=${2:-}
if [[ -z "$mode" || -z "$dir" ]]; then
  sed -n '5,7p' "$0" | sed 's/^# *//'
  exit 2
fi
command -v redis-server >/dev/null || { echo "redis-server not found: apt-get update && apt-get install -y redis-server" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

start() { # port, data dir, extra args...
  local port=$1 data=$2
  shift 2
  mkdir -p "$data"
  redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes --save '' --appendonly no \
    --daemonize yes --pidfile "$data/redis.pid" --dir "$data" --logfile "$data/redis.log" "$@"
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && { echo "redis-server on 127.0.0.1:$port, pid $(cat "$data/redis.pid")"; return; }
    sleep 0.05
  done
  echo "redis-server on port $port did not answer; see $data/redis.log" >&2
  exit 1
}

case "$mode" in
  single)
    start "${3:-6390}" "$dir/single"
    ;;
  cluster)
    base=${3:-7000}
    nodes=()
    for i in 0 1 2; do
      start $((base + i)) "$dir/node-$i" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
      nodes+=("127.0.0.1:$((base + i))")
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
    for _ in $(seq 100); do
      redis-cli -p "$base" cluster info | grep -q 'cluster_state:ok' && { echo "cluster ready: ${nodes[*]}"; exit 0; }
      sleep 0.1
    done
    echo "cluster did not reach cluster_state:ok" >&2
    exit 1
    ;;
  stop)
    shopt -s nullglob
    for pidfile in "$dir"/*/redis.pid; do
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null && echo "stopped pid $pid ($pidfile)" || true
      rm -f "$pidfile"
    done
    ;;
  *)
    echo "unknown mode $mode (single | cluster | stop)" >&2
    exit 2
    ;;
esac
