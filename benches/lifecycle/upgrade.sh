#!/usr/bin/env bash
# An upgrade (SIGUSR2) under load: wrk against `nikaia serve` while the
# server is upgraded twice (the new process, then the newer one); wrk's
# socket errors and non-2xx answers are what a client would have seen.
# Usage: benches/lifecycle/upgrade.sh [SECONDS] [close|keepalive]
#   close (default): `Connection: close`, a new connection per request;
#   keepalive: wrk's kept connections (a draining server closes idle ones).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-12}
mode=${2:-close}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)"; exit 1; }
cargo build -q --release -p nikaia_cli
work=$(mktemp -d)
trap 'pkill -TERM -f "nikaia serve $work/root" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root"
head -c 4096 /dev/urandom > "$work/root/index.html"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/runtime.toml" <<TOML
listen = "127.0.0.1:$port"
workers = 1
access-log = "off"
error-log = "$work/error.log"
TOML
target/release/nikaia serve "$work/root" --runtime "$work/runtime.toml" > /dev/null &
first=$!
sleep 0.5
header=()
[ "$mode" = close ] && header=(-H "Connection: close")
wrk -t2 -c32 -d"${seconds}s" "${header[@]}" "http://127.0.0.1:$port/index.html" > "$work/wrk.txt" &
wrkpid=$!
sleep $((seconds / 3))
kill -USR2 "$first"
sleep $((seconds / 3))
second=$(grep -o 'SIGUSR2: starting [^ ]* (pid [0-9]*' "$work/error.log" | tail -1 | grep -o '[0-9]*$')
kill -USR2 "$second"
wait "$wrkpid"
third=$(grep -o 'SIGUSR2: starting [^ ]* (pid [0-9]*' "$work/error.log" | tail -1 | grep -o '[0-9]*$')
echo "mode: $mode; pids: $first -> $second -> $third"
grep -c 'is ready; this process stops accepting and drains' "$work/error.log" | sed 's/^/upgrades completed: /'
kill -0 "$first" 2>/dev/null && echo "the first process is still running" || echo "the first process exited"
cat "$work/wrk.txt"
echo "error log, less the upgrade notices:"
grep -v -e "SIGUSR2: starting" -e "is ready" -e "upgrade: serving" "$work/error.log" | head -20 || true
kill -TERM "$third"
