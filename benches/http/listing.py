#!/usr/bin/env python3
"""What a directory listing costs: `nikaia serve DIR --list` (workers = 1,
access log off) over a directory of N entries (default 100 000; names
`f-000000.txt`, sizes 0..96 bytes), asked for its HTML and JSON listings
(and sorted, and with If-None-Match) on one kept-alive connection.

For each case: time to the first byte of the answer and to its last byte
(median, min and max of R runs, the first run not counted), the page's
bytes, and the server's resident memory (VmRSS) before the first listing
and after the last, with its peak (VmHWM). The page cache is warm (the
directory was just made); the listing is read on the io pool either way.

usage: benches/http/listing.py [-n N] [-r R] [--io-threads T] [--json FILE] BINARY
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (free_port)


def make_dir(root, n):
    many = os.path.join(root, "many")
    mark = os.path.join(root, f".made-{n}")
    if os.path.exists(mark):
        return many
    os.makedirs(many, exist_ok=True)
    for name in os.listdir(many):
        os.unlink(os.path.join(many, name))
    for i in range(n):
        with open(os.path.join(many, f"f-{i:06}.txt"), "wb") as f:
            f.write(b"x" * (i % 97))
    open(mark, "w").close()
    return many


def rss(pid):
    """(VmRSS, VmHWM) of `pid` in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out["VmRSS"], out["VmHWM"]


def ask(sock, path, headers=()):
    """(status, ttfb s, total s, body bytes, etag) of one GET."""
    req = f"GET {path} HTTP/1.1\r\nHost: bench\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
    start = time.perf_counter()
    sock.sendall(req.encode())
    buf = sock.recv(65536)
    first = time.perf_counter()
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
    length = int(fields.get("content-length", "0"))
    chunks = [body]
    got = len(body)
    while got < length:
        c = sock.recv(1 << 20)
        if not c:
            raise RuntimeError("closed early")
        chunks.append(c)
        got += len(c)
    end = time.perf_counter()
    return status, first - start, end - start, got, fields.get("etag")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("binary")
    p.add_argument("-n", type=int, default=100_000, help="entries in the directory")
    p.add_argument("-r", type=int, default=7, help="runs per case (the first is not counted)")
    p.add_argument("--io-threads", type=int, help="the runtime's io-threads (default: its default, 4)")
    p.add_argument("--json", help="write the figures here too")
    a = p.parse_args()

    work = os.path.abspath("target/bench-listing")
    root = os.path.join(work, "site")
    os.makedirs(root, exist_ok=True)
    t = time.perf_counter()
    make_dir(root, a.n)
    print(f"directory of {a.n} entries ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    port = bench.free_port()
    rt = os.path.join(work, "listing.toml")
    with open(rt, "w") as f:
        f.write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\n')
        if a.io_threads:
            f.write(f"io-threads = {a.io_threads}\n")
    server = subprocess.Popen(
        [a.binary, "serve", root, "--list", "--runtime", rt],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("the server did not start")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ask(sock, "/")  # the top listing: one entry
        before = rss(server.pid)
        _, _, _, _, etag = ask(sock, "/many/?format=json")
        cases = [
            ("HTML, by name", "/many/", ()),
            ("JSON, by name", "/many/?format=json", ()),
            ("HTML, by mtime desc", "/many/?sort=mtime&order=desc", ()),
            ("JSON, by size", "/many/?format=json&sort=size", ()),
            ("JSON, If-None-Match (304)", "/many/?format=json", (f"If-None-Match: {etag}",)),
        ]
        rows = []
        for label, path, headers in cases:
            runs = [ask(sock, path, headers) for _ in range(a.r)][1:]
            status = runs[0][0]
            ttfb = [r[1] * 1000 for r in runs]
            total = [r[2] * 1000 for r in runs]
            rows.append(
                {
                    "case": label,
                    "path": path,
                    "status": status,
                    "bytes": runs[0][3],
                    "ttfb_ms": [statistics.median(ttfb), min(ttfb), max(ttfb)],
                    "total_ms": [statistics.median(total), min(total), max(total)],
                }
            )
        after = rss(server.pid)
    finally:
        server.terminate()
        server.wait()

    io = f", io-threads = {a.io_threads}" if a.io_threads else ""
    print(f"nikaia serve --list, {a.n} entries, workers = 1{io}, {a.r - 1} runs per case (median [min–max])")
    print()
    print("| case | status | page bytes | first byte, ms | last byte, ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        t1, t2 = r["ttfb_ms"], r["total_ms"]
        print(
            f"| {r['case']} | {r['status']} | {r['bytes']:,} | "
            f"{t1[0]:.1f} [{t1[1]:.1f}–{t1[2]:.1f}] | {t2[0]:.1f} [{t2[1]:.1f}–{t2[2]:.1f}] |"
        )
    print()
    print(
        f"server RSS: {before[0] / 1024:.1f} MiB before the first listing of /many/, "
        f"{after[0] / 1024:.1f} MiB after the last (peak {after[1] / 1024:.1f} MiB)"
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {"entries": a.n, "rows": rows, "rss_kib": {"before": before, "after": after}},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
