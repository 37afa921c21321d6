#!/bin/bash
# Clean-build timing: aws-lc-rs vs ring. Run `cargo fetch` first; builds are --offline.
# Usage: ./build-times.sh [REPS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); cd "$HERE"; [ -f certs/ee.der ] || ./certs.sh; T="$HERE/../../target/tls-provider"
REPS=${1:-2}
LOG=build-times.log
echo "# $(date -Is) rustc=$(rustc --version)" >> $LOG
nice -n 19 cargo fetch
one() { # prov profile rep
  local prov=$1 prof=$2 rep=$3 dir=$T/tt-$1-$2 flag=""
  [ "$prof" = release ] && flag="--release"
  rm -rf "$dir"
  local load0; load0=$(cut -d' ' -f1 /proc/loadavg)
  CARGO_TARGET_DIR=$dir /usr/bin/time -f "%e %U %S" -o $T/.time \
    nice -n 19 cargo build $flag --offline --features "$prov" > $T/.buildout 2>&1 \
    || { cat $T/.buildout; exit 1; }
  read -r wall user sys < $T/.time
  local sub=$([ "$prof" = release ] && echo release || echo debug)
  local bin=$dir/$sub/provider-bench size stripped
  size=$(stat -c %s "$bin"); strip -o $T/.stripped "$bin"; stripped=$(stat -c %s $T/.stripped)
  echo "BUILD prov=$prov profile=$prof rep=$rep wall_s=$wall user_s=$user sys_s=$sys load_before=$load0 load_after=$(cut -d' ' -f1 /proc/loadavg) bin_bytes=$size stripped_bytes=$stripped" | tee -a $LOG
}
for rep in $(seq 1 "$REPS"); do
  if [ $((rep % 2)) = 1 ]; then order="aws ring"; else order="ring aws"; fi
  for prof in release debug; do for p in $order; do one $p $prof $rep; done; done
done
