#!/usr/bin/env bash
# The whole server beside nginx: installs nginx, wrk, curl and openssl if
# absent, builds `nikaia` (release), builds the fixture, and runs both servers
# (one worker each) alternately on loopback.
# Usage: benches/http/run.sh [REPEATS] [SECONDS] [bench.py options...]
#   e.g. benches/http/run.sh 3 5 --tls --json benches/http/results/DATE-tls.json
#   (--tls: HTTPS, TLS 1.3 only, certificate and client config made by openssl)
#   benches/http/run.sh 3 5 --versus target/before/release/nikaia   (two builds of nikaia)
#   benches/http/run.sh 3 5 --versus target/before/release/nikaia --tls   (the two builds over
#   plaintext, then over HTTPS as --tls sets it up: same certificate, TLS 1.3, client config; no nginx)
#   benches/http/run.sh 3 5 --wasm   (nikaia serve vs its wasm32 build under Node; builds target/wasm-pkg)
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

cargo build --release -q -p nikaia_cli
for a in "${@:3}"; do
    if [ "$a" = --wasm ]; then
        command -v node >/dev/null 2>&1 || { echo "--wasm needs node on PATH" >&2; exit 1; }
        nikaia_std/wasm/build.sh
    fi
done
exec python3 benches/http/bench.py --nikaia target/release/nikaia --repeats "${1:-3}" --seconds "${2:-5}" "${@:3}"
