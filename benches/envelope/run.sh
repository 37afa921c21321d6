#!/usr/bin/env bash
# The operating envelope of `nikaia serve` on loopback (docs/reliability.md):
# 10 000 idle connections, 1 000 slow readers of a 64 MiB file, and a soak
# over 10 000 files edited while they are served. Needs python3 (stdlib only)
# and cargo; installs nothing. Each case stops by itself.
#
# Usage: benches/envelope/run.sh [idle|slow|soak|all] [options for envelope.py]
#   benches/envelope/run.sh all                 # idle, slow, then a 30-minute soak
#   benches/envelope/run.sh soak --minutes 5    # a shorter soak
#
# Descriptors: 10 000 connections need more than the usual 1024. This script
# raises the soft `ulimit -n` to the hard limit (and the hard one to 65536
# when it may, as root); envelope.py raises its own soft limit the same way,
# and the server it starts inherits the limit (nikaia raises its soft limit
# to the hard one itself, spec/http.md). A hard limit below ~11 000 makes the
# idle case stop short of 10 000 (it says how many it opened).
set -euo pipefail
cd "$(dirname "$0")/../.."

ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"

cargo build --release -q -p nikaia_cli
# A private copy, so a rebuild by someone else during a 30-minute soak
# changes nothing under the running case.
bin="$(mktemp -d)/nikaia"
cp target/release/nikaia "$bin"

what="${1:-all}"; shift || true
if [ "$what" = all ] && [ $# -gt 0 ]; then
    echo "options go with one case: $0 idle|slow|soak [options]" >&2; exit 2
fi
out=benches/envelope/results
day="$(date -u +%F)"
mkdir -p "$out"
py() { python3 benches/envelope/envelope.py "$@"; }

case "$what" in
    idle|all) py idle --nikaia "$bin" --json "$out/$day-idle.json" "$@" ;;&
    slow|all) py slow --nikaia "$bin" --json "$out/$day-slow.json" "$@" ;;&
    soak|all) py soak --nikaia "$bin" --json "$out/$day-soak.json" --csv "$out/$day-soak.csv" \
                  --svg docs/reliability-soak.svg "$@" ;;
    idle|slow) ;;
    *) echo "usage: $0 [idle|slow|soak|all] [envelope.py options]" >&2; exit 2 ;;
esac
