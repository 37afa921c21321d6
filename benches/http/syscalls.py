#!/usr/bin/env python3
"""Syscalls per request of one or more nikaia builds: a deterministic count,
where CPU figures on a shared machine are not.

For each build: starts `nikaia serve` (workers = 1, access log off) over the
bench fixture, warms each case up, attaches `strace -f -c` to the server,
makes N requests on one kept-alive connection (plain, or TLS 1.3 with the
bench's certificate), detaches, and prints each syscall's calls per request.
The client waits for each answer before the next request (like wrk -c1), so
the counts are the server's per-request path; then one case sends 16
requests in one write before reading their answers (pipelining), and two
write one request on each of 32 connections before reading the 32 answers
(what wrk -c32 does), so one wait finds many connections ready; their
connections are made before the count starts.

usage: benches/http/syscalls.py [-n N] [--tls] LABEL=BINARY [LABEL=BINARY ...]
"""

import argparse
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (the fixture, the certificate, free_port)

CASES = [
    ("4 KiB × 64 (named)", [f"/4k/{i}.bin" for i in range(64)]),
    # Above the kept table's 8 KiB: read from the file each time.
    ("12 KiB × 64 (named, unkept)", [f"/12k/{i}.bin" for i in range(64)]),
    ("page 4 KiB (constant)", ["/page.html"]),
    ("1 MiB × 64 (named)", [f"/1m/{i}.bin" for i in range(64)]),
]
# Requests sent together in one write, then their answers read: pipelining.
PIPELINED = ("4 KiB × 64 (named), 16 pipelined", [f"/4k/{i}.bin" for i in range(64)], 16)
# Many connections with one request each in flight (as wrk -c32 loads): the
# server finds several ready at one wait, and the hits of one loop turn share
# one check of a kept name (spec/files.md).
CONCURRENT = [
    ("page 4 KiB (constant), 32 connections", ["/page.html"], 32),
    ("4 KiB × 64 (named), 32 connections", [f"/4k/{i}.bin" for i in range(64)], 32),
]


def fixture():
    """The bench's work directory and site (made if missing)."""
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "site")
    os.makedirs(work, exist_ok=True)
    bench.make_fixture(root)
    return work, root


def start(binary, root, work, tls, prefix=(), wait=10):
    """`nikaia serve` (after `prefix`, a tool that runs it) on a free port,
    once it accepts connections."""
    port = bench.free_port()
    rt = os.path.join(work, f"syscalls-{port}.toml")
    with open(rt, "w") as f:
        f.write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\n')
        if tls:
            f.write(f'tls-cert = "{tls["cert"]}"\ntls-key = "{tls["key"]}"\n')
        # Keys added for a measurement (a site's rules, say): the text of
        # the file BENCH_RUNTIME_EXTRA names.
        if os.environ.get("BENCH_RUNTIME_EXTRA"):
            with open(os.environ["BENCH_RUNTIME_EXTRA"]) as extra:
                f.write(extra.read())
    proc = subprocess.Popen([*prefix, binary, "serve", root, "--runtime", rt],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(int(wait / 0.05)):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{binary} did not start")


def connect(port, tls):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        ctx = ssl.create_default_context(cafile=tls["cert"])
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s


def get(s, path, buf):
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    return answer(s, path, buf)


def get_many(s, paths, buf):
    """Sends every request in one write, then reads their answers in order."""
    s.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode() for p in paths))
    for p in paths:
        buf = answer(s, p, buf)
    return buf


def answer(s, path, buf):
    while b"\r\n\r\n" not in buf:
        buf += s.recv(1 << 16)
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        rest += s.recv(1 << 20)
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"{path}: {head[:40]!r}")
    return bytearray(rest[length:])


def concurrent(socks, paths, n):
    """`n` requests over the connections `socks`: one request written on
    each, then every answer read, round after round."""
    conns = len(socks)
    bufs = [bytearray() for _ in socks]
    done = 0
    while done < n:
        batch = min(conns, n - done)
        for k in range(batch):
            p = paths[(done + k) % len(paths)]
            socks[k].sendall(f"GET {p} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        for k in range(batch):
            bufs[k] = answer(socks[k], paths[(done + k) % len(paths)], bufs[k])
        done += batch


def count(binary, root, work, tls, n):
    proc, port = start(binary, root, work, tls)
    try:
        out = {}
        for name, paths, *depth in CASES + [PIPELINED] + CONCURRENT:
            depth = depth[0] if depth else 1
            many = any(name == c[0] for c in CONCURRENT)
            s = connect(port, tls)
            buf = bytearray()
            for i in range(2 * len(paths) + 16):  # warm: kept table, page cache
                buf = get(s, paths[i % len(paths)], buf)
            socks = [connect(port, tls) for _ in range(depth)] if many else []
            concurrent(socks, paths, len(socks))  # each connection set up
            log = tempfile.NamedTemporaryFile(suffix=".strace", delete=False).name
            tracer = subprocess.Popen(["strace", "-f", "-c", "-o", log, "-p", str(proc.pid)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # attached to every thread
            if many:
                concurrent(socks, paths, n)
            else:
                for i in range(0, n, depth):
                    batch = [paths[(i + k) % len(paths)] for k in range(depth)]
                    buf = get(s, batch[0], buf) if depth == 1 else get_many(s, batch, buf)
            time.sleep(0.2)
            tracer.send_signal(signal.SIGINT)
            tracer.wait()
            s.close()
            for c in socks:
                c.close()
            calls = {}
            with open(log) as f:
                for line in f:
                    m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
                    if m and m.group(2) != "total":
                        calls[m.group(2)] = int(m.group(1)) / n
            os.unlink(log)
            out[name] = calls
        return out
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()


def main():
    if not shutil.which("strace"):
        raise SystemExit("needs strace: apt-get install strace")
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("builds", nargs="+", metavar="LABEL=BINARY")
    args = ap.parse_args()
    work, root = fixture()
    tls = None
    if args.tls:
        mat = bench.tls_material(work)
        tls = {"cert": mat["cert"], "key": os.path.join(work, "key.pem")}
    builds = [b.split("=", 1) for b in args.builds]
    results = {label: count(binary, root, work, tls, args.n) for label, binary in builds}
    print(f"Syscalls per request ({'TLS 1.3' if tls else 'plaintext'}, one kept-alive connection, "
          f"{args.n} requests a case, strace -f -c on the server, workers = 1):\n")
    labels = [label for label, _ in builds]
    for name, *_ in CASES + [PIPELINED] + CONCURRENT:
        names = sorted({c for label in labels for c in results[label][name]})
        print(f"| {name} | " + " | ".join(labels) + " |")
        print("|---|" + "---|" * len(labels))
        for c in names:
            print(f"| {c} | " + " | ".join(f"{results[label][name].get(c, 0):.2f}" for label in labels) + " |")
        print("| **all** | " + " | ".join(f"**{sum(results[label][name].values()):.2f}**" for label in labels) + " |\n")


if __name__ == "__main__":
    main()
