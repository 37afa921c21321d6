#!/usr/bin/env bash
# Serves ROOT at ADDR with Node's node:http through the wasm32 build of
# `nikaia serve`. Usage: nikaia_std/wasm/serve.sh [ROOT] [ADDR] [--hidden] [--list]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/build.sh" >&2
exec node "$here/host.cjs" "${1:-.}" "${2:-127.0.0.1:8080}" "${@:3}"
