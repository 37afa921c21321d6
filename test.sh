#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every check.
set -euo pipefail
cd "$(dirname "$0")"
# What the disk had left, printed however the run ends: tests write files
# of up to 1 GiB, and a full disk shows only as ENOSPC in one of them.
trap 'df -h . "${CARGO_TARGET_DIR:-target}" "${TMPDIR:-/tmp}" >&2 || true' EXIT

need=()
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v node >/dev/null 2>&1 || need+=(nodejs)
# The access log's reader in tests/tests/http_server.rs.
command -v goaccess >/dev/null 2>&1 || need+=(goaccess)
# The Prometheus text parser `nikaia explain --prometheus` is checked with.
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip)
# nghttp and h2load: many HTTP/2 streams on one connection (tests/tests/h2.rs).
command -v nghttp >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1 || need+=(nghttp2-client)
# systemd-socket-activate: socket activation's real parent (nikaia_cli/tests/lifecycle.rs).
command -v systemd-socket-activate >/dev/null 2>&1 || need+=(systemd)
# ACME (nikaia_cli/tests/acme*.rs): Debian's Pebble and its DNS, lego
# against the mock CA, libfaketime for a jumped clock, unshare for a
# full tmpfs and a private /etc/hosts.
command -v pebble >/dev/null 2>&1 && command -v pebble-challtestsrv >/dev/null 2>&1 || need+=(pebble)
command -v lego >/dev/null 2>&1 || need+=(lego)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need+=(faketime)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
# strace: the order of a written file's syncs, link and rename
# (tests/tests/to_file_faults.rs).
command -v strace >/dev/null 2>&1 || need+=(strace)
# A browser's EventSource on a produced event stream (tests/tests/events_browser.rs),
# and a listing's upload control driven over --remote-debugging-pipe
# (tests/tests/uploads_browser.rs).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# gtlsclient (ngtcp2 with GnuTLS): an HTTP/3 client that is not ours
# (nikaia_cli/tests/h3_lifecycle.rs, explain_h3.rs, tests/tests/h3*.rs).
command -v gtlsclient >/dev/null 2>&1 || need+=(ngtcp2-client)
# certutil: the test CA in a temporary NSS database, trusted by Chromium as
# a user's private CA is (tests/tests/h3_workers/browser.rs).
command -v certutil >/dev/null 2>&1 || need+=(libnss3-tools)
# WebDAV clients that are not ours (tests/tests/dav_clients.rs): litmus
# 0.13's suite programs, rclone's webdav remote, cadaver scripted.
[ -x /usr/libexec/litmus/basic ] || need+=(litmus)
command -v rclone >/dev/null 2>&1 || need+=(rclone)
command -v cadaver >/dev/null 2>&1 || need+=(cadaver)
# davfs2: a WebDAV drive mounted through FUSE (tests/tests/dav_mount.rs,
# skipped with its reason where `mount -t davfs` cannot run). Its install
# asks whether mount.davfs is made setuid for other users: no, preseeded.
[ -x /usr/sbin/mount.davfs ] || [ -x /sbin/mount.davfs ] || need+=(davfs2)
davfs2_preseed='davfs2 davfs2/suid_file boolean false'
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "$davfs2_preseed" | debconf-set-selections
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    else
        echo "$davfs2_preseed" | sudo debconf-set-selections
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    fi
fi

python3 -c 'import prometheus_client' 2>/dev/null ||
    python3 -m pip install -q prometheus-client 2>/dev/null ||
    python3 -m pip install -q --break-system-packages prometheus-client
# The mock ACME CA's X.509 and JWS (tests/acme/mock_ca.py).
python3 -c 'import cryptography' 2>/dev/null ||
    python3 -m pip install -q cryptography 2>/dev/null ||
    python3 -m pip install -q --break-system-packages cryptography
# The Python HTTP/2 library (PyPI h2), for HTTP/2 checks written in Python.
python3 -c 'import h2' 2>/dev/null ||
    python3 -m pip install -q h2 2>/dev/null ||
    python3 -m pip install -q --break-system-packages h2
# An HTTP/1.1 parser of its own, to read the fuzz corpus's request heads
# beside ours (nikaia_std/tests/heads_h11.py).
python3 -c 'import h11' 2>/dev/null ||
    python3 -m pip install -q h11 2>/dev/null ||
    python3 -m pip install -q --break-system-packages h11
# The tus client a resumable upload is resumed with (PyPI tuspy:
# nikaia_cli/tests/resumable.rs).
python3 -c 'import tusclient' 2>/dev/null ||
    python3 -m pip install -q tuspy 2>/dev/null ||
    python3 -m pip install -q --break-system-packages tuspy
# The scripted HTTP/3 client (PyPI aioquic, which brings pylsqpack):
# exact answers, malformed frames and floods (tests/h3/h3client.py).
# 1.7.x: the attacks override some of its QuicConnection's private methods.
python3 -c 'import aioquic, sys; sys.exit(aioquic.__version__[:4] != "1.7.")' 2>/dev/null ||
    python3 -m pip install -q 'aioquic>=1.7.2,<1.8' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'aioquic>=1.7.2,<1.8'
# The HTTP/2 conformance suite tests/tests/h2.rs runs against an in-process
# server (built only when missing; about 2 minutes on two cores).
command -v httpwg >/dev/null 2>&1 || cargo install httpwg-cli --locked

cargo fmt --all -- --check
# The wasm32 target, the wasm-bindgen CLI at Cargo.lock's version (built only
# when missing), and the module the Node host test serves.
nikaia_std/wasm/build.sh
# nikaia_std's fuzzing entry points are a feature (never in a program's
# build); the corpus replay tests need them.
# QUIC on aws-lc-rs alone: ring is built for no target of ours (spec/http3.md).
ring_users=$(cargo tree --locked --workspace -i ring --target x86_64-unknown-linux-gnu -e normal,build 2>/dev/null)
if [ -n "$ring_users" ]; then
    echo "test.sh: ring is built for x86_64-unknown-linux-gnu:" >&2
    echo "$ring_users" >&2
    exit 1
fi
cargo clippy --workspace --all-targets --locked --features nikaia_std/fuzzing,nikaia_std/bench -- -D warnings
# nikaia_std without ACME (the nikaia tool turns it on for the workspace).
cargo clippy -p nikaia_std --all-targets --locked --features fuzzing -- -D warnings
cargo clippy -p nikaia_std -p nikaia_wasm --target wasm32-unknown-unknown --lib --tests --locked -- -D warnings
cargo test --workspace --locked --features nikaia_std/fuzzing
# nikaia_std's own tests without ACME: a program given [acme] refuses to start.
cargo test -p nikaia_std --locked --features fuzzing
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
    cargo test -p nikaia_std --target wasm32-unknown-unknown --locked --lib --tests
