#!/usr/bin/env bash
# Builds bench_sendfile and runs every vehicle REPEATS times; the markdown
# tables go to stdout, the raw results to target/bench-sendfile/.
# Usage: benches/sendfile/sendfile.sh REPEATS [more bench_sendfile flags]
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 REPEATS [--scale F] [--only NAME,..] [--sizes 4k,64k,1m]" >&2
    exit 2
fi
repeats=$1
shift
cd "$(dirname "$0")/../.."
cargo build --release -p bench_sendfile >&2
out=target/bench-sendfile
mkdir -p "$out"
json="$out/$(date -u +%Y%m%dT%H%M%SZ).json"
echo "uptime before: $(uptime)" >&2
exec ./target/release/bench_sendfile --repeats "$repeats" --json "$json" "$@"
