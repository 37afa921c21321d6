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
#   benches/http/run.sh 3 5 --bun   (nikaia serve, nginx, Bun and the floor on the 4 KiB page and
#   4 KiB named files; installs bun 1.4 from npm into target/bun if absent: needs npm)
#   benches/http/run.sh 3 5 --bun --held target/release/examples/held   (and the page held in
#   memory by nikaia_std/examples/held.rs, which it builds)
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
case " ${*:3} " in *" --held "*) cargo build --release -q -p nikaia_std --example held ;; esac
for a in "${@:3}"; do
    if [ "$a" = --wasm ]; then
        command -v node >/dev/null 2>&1 || { echo "--wasm needs node on PATH" >&2; exit 1; }
        nikaia_std/wasm/build.sh
    fi
    if [ "$a" = --bun ]; then
        # npm's bun package: its postinstall puts the platform's binary (from
        # @oven/bun-linux-x64, a registry package) at node_modules/.bin/bun.
        bun=target/bun/node_modules/.bin/bun
        if ! "$bun" --version 2>/dev/null | grep -q '^1\.4\.'; then
            command -v npm >/dev/null 2>&1 || { echo "--bun needs npm on PATH" >&2; exit 1; }
            mkdir -p target/bun
            npm install --prefix target/bun --no-save --no-audit --no-fund bun@1.4
            # If the postinstall did not run (scripts disabled), run it now.
            "$bun" --version >/dev/null 2>&1 || (cd target/bun/node_modules/bun && node install.js)
            "$bun" --version >/dev/null 2>&1 || { echo "bun did not install into target/bun" >&2; exit 1; }
        fi
    fi
done
exec python3 benches/http/bench.py --nikaia target/release/nikaia --repeats "${1:-3}" --seconds "${2:-5}" "${@:3}"
