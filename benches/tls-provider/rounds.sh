#!/bin/bash
# Interleaved protocol: ROUNDS rounds, each runs the aws binary then the ring binary
# (1 measured run each, after the binary's own warm-up), so both providers see the same
# background load. Then aggregate.py prints median/min/max and paired ring/aws ratios.
# Usage: ./rounds.sh [ROUNDS] [FULL_N] [RESUMED_N] [BULK_1M_N] [BULK_4K_N]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); cd "$HERE"; [ -f certs/ee.der ] || ./certs.sh; T="$HERE/../../target/tls-provider"
R=${1:-10}; F=${2:-3000}; S=${3:-6000}; M=${4:-300}; K=${5:-30000}
OUT=rounds.log; : > $OUT
for r in $(seq 1 "$R"); do
  for p in aws ring; do
    echo "## round $r $p load=$(cut -d' ' -f1 /proc/loadavg) stat=$(head -1 /proc/stat | cut -c6-)" >> $OUT
    nice -n 19 $T/tt-$p-release/release/provider-bench 1 "$F" "$S" "$M" "$K" | grep -E '^(provider|run|negotiated)' >> $OUT
  done
done
python3 aggregate.py $OUT
