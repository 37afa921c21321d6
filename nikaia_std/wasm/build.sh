#!/usr/bin/env bash
# Builds the wasm32 module of `nikaia serve` and its JS bindings into
# target/wasm-pkg ($CARGO_TARGET_DIR/wasm-pkg when that is set), installing what it needs: the wasm32 target, and the
# wasm-bindgen CLI at the version Cargo.lock has (only when the one on PATH
# differs: building it takes minutes).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
    echo "installing wasm-bindgen-cli $want (found: ${have:-none})" >&2
    cargo install wasm-bindgen-cli --version "$want" --locked ||
        cargo install wasm-bindgen-cli --version "$want"
fi
target=${CARGO_TARGET_DIR:-$top/target}
cargo build --release --target wasm32-unknown-unknown -p nikaia_wasm
wasm-bindgen --target nodejs --out-dir "$target/wasm-pkg" \
    "$target/wasm32-unknown-unknown/release/nikaia_wasm.wasm"
