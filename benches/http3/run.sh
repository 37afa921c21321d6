#!/usr/bin/env bash
# HTTP/3's cost beside HTTP/2 over TLS, Caddy, ngtcp2's gtlsserver and
# nginx over HTTP/2, one worker each (--workers N), in two network
# namespaces joined by a veth pair (MTU 1500) or by TUN devices and a relay
# that delays every packet (--wire tun). Installs what is missing (caddy,
# ngtcp2-client, ngtcp2-server, nghttp2-client, nginx, curl, gcc), builds
# `nikaia` and the relay (release) and runs bench.py as root (the namespaces
# need it). Arguments go to bench.py, e.g.
#   benches/http3/run.sh --quick
#   benches/http3/run.sh --rounds 5 --seconds 5 --out benches/http3/results/DATE.md
#   benches/http3/run.sh --wire tun --loads stream --rounds 7 \
#       --servers nikaia-h3,nikaia-h2,caddy-h3,caddy-h2,gtls-h3,nginx-h2
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v caddy >/dev/null 2>&1 || need+=(caddy)
command -v gtlsclient >/dev/null 2>&1 || need+=(ngtcp2-client)
command -v gtlsserver >/dev/null 2>&1 || [ -x /usr/sbin/gtlsserver ] || need+=(ngtcp2-server)
command -v h2load >/dev/null 2>&1 || need+=(nghttp2-client)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
if [ ${#need[@]} -gt 0 ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

cargo build --release -q -p nikaia_cli
target="${CARGO_TARGET_DIR:-$PWD/target}"
# The relay is its own package (not in the workspace): same target dir.
(cd benches/http3/relay && CARGO_TARGET_DIR="$target" cargo build --release -q)
exec $sudo env PATH="$PATH:/usr/sbin" python3 benches/http3/bench.py --nikaia "$target/release/nikaia" \
    --relay "$target/release/tun-relay" "$@"
