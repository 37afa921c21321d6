#!/usr/bin/env bash
# WebDAV beside nginx (dav + dav-ext) and rclone `serve webdav` (#49): a
# PROPFIND Depth 1 of 10 000 files and a COPY of a 1 GiB file, one worker
# each, on one file system, ratios in one run. Says what is missing and
# installs it (nginx-light, libnginx-mod-http-dav-ext, rclone, curl,
# python3), builds `nikaia` (release) and runs bench.py. Arguments go to
# bench.py, e.g.
#   benches/webdav/run.sh --rounds 7 --copy-rounds 5 \
#       --out benches/webdav/results/$(date +%F).md --json benches/webdav/results/$(date +%F).json
#   benches/webdav/run.sh --servers nginx,rclone --ops copy --copy-mib 256
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
[ -e /usr/lib/nginx/modules/ngx_http_dav_ext_module.so ] || need+=(libnginx-mod-http-dav-ext)
command -v rclone >/dev/null 2>&1 || need+=(rclone)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v findmnt >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
    echo "benches/webdav: missing, installing: ${need[*]}" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

cargo build --release -q -p nikaia_cli
target="${CARGO_TARGET_DIR:-$PWD/target}"
exec env PATH="$PATH:/usr/sbin" python3 benches/webdav/bench.py --nikaia "$target/release/nikaia" "$@"
