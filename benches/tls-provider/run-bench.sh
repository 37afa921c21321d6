#!/bin/bash
# Runs the in-memory benchmark for both providers (release binaries from build-times.sh,
# or builds them into target-<prov>/ if missing). Usage: ./run-bench.sh [PASSES] [bench args...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); cd "$HERE"; [ -f certs/ee.der ] || ./certs.sh; T="$HERE/../../target/tls-provider"
PASSES=${1:-1}; shift || true
for p in aws ring; do
  bin=$T/tt-$p-release/release/provider-bench
  if [ ! -x "$bin" ]; then
    CARGO_TARGET_DIR=$T/target-$p nice -n 19 cargo build --release --features $p
    bin=$T/target-$p/release/provider-bench
  fi
  eval "BIN_$p=$bin"
done
for pass in $(seq 1 "$PASSES"); do
  for p in aws ring; do
    eval "bin=\$BIN_$p"
    echo "## pass $pass $p load=$(cut -d' ' -f1-3 /proc/loadavg) $(date -Is)"
    nice -n 19 "$bin" "$@"
  done
done
