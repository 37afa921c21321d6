#!/usr/bin/env python3
"""nikaia serve's HTTP/2 beside nginx's, one worker each, on loopback, with
h2load (Debian nghttp2-client).

Both servers present the same certificate (bench.py's tls_material: ECDSA
P-256) and are reached over TLS 1.3 with ALPN h2; both allow 10^6 requests
per connection (nginx's keepalive_requests, our http2-max-requests) so
h2load's long-lived clients are never sent away. Cases:

  4k-streams  64 files of 4 KiB named in turn, 4 connections × 32 streams
  1m          64 files of 1 MiB, 4 connections × 4 streams
  page        a page of 100 assets of 4 KiB: each h2load client is one page
              load — a new TLS connection, 100 requests with up to 100
              streams at once; 50 clients per run
  page-h1     the same page from nikaia over HTTP/1.1, six connections per
              page (h2load --h1, one request at a time per connection)

Each run: requests/s from h2load, server CPU µs/request (utime+stime of the
worker process), machine CPU µs/request (non-idle /proc/stat jiffies, the
client's share included: on loopback the kernel's TCP work moves between
them). ROUNDS rounds, the servers alternating inside each round; medians,
ranges, and the ratio nikaia/nginx of each round's pair. --h2c measures the
plaintext listeners (prior knowledge) instead.

    benches/http/http2.py --nikaia target/release/nikaia [--rounds 5] [--seconds 5]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (CLK_TCK, NGINX_CONF, NGINX_TLS_CONF, TLS_SUITE, Server, TlsServer,  # noqa: E402
                   loadavg, machine_busy, make_fixture, proc_cpu, tls_material)

PAGE_ASSETS = 100


def h2_conf(conf, h2c):
    """nginx's configuration with HTTP/2 on the listener."""
    # keepalive_requests (10^6 above) bounds HTTP/2 requests too since 1.19.7.
    if h2c:
        return conf.replace("reuseport;", "reuseport http2;")
    return conf.replace("ssl reuseport;", "ssl reuseport http2;")


class H2Server(TlsServer):
    def __init__(self, kind, args, root, work, h2c):
        super().__init__(kind, args, root, work)
        self.h2c = h2c
        self.runtime_extra = "http2-max-requests = 1000000\n" + ("" if h2c else self.runtime_extra)

    def nginx_conf(self):
        if self.h2c:
            return h2_conf(NGINX_CONF.format(dir=self.workdir, port=self.port, root=self.root), True)
        return h2_conf(NGINX_TLS_CONF.format(dir=self.workdir, port=self.port, root=self.root,
                                             access_log="access_log off;", suite=TLS_SUITE), False)

    @property
    def base(self):
        return f"{'http' if self.h2c else 'https'}://127.0.0.1:{self.port}"


def uri_file(work, name, paths):
    p = os.path.join(work, name)
    with open(p, "w") as f:
        f.write("\n".join(paths) + "\n")
    return p


def h2load(server, args, h1=False, env=None):
    """Runs h2load against `server`: (requests done, wall seconds, errors)."""
    cmd = ["h2load", *args]
    if h1:
        cmd.append("--h1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    m = re.search(r"finished in ([\d.]+)(m?s)", out)
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed", out)
    if not m or not done:
        raise SystemExit(f"h2load said:\n{out}")
    secs = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    return int(done.group(2)), secs, int(done.group(3))


def measure(server, case, args, work, env):
    base = server.base
    if case == "4k-streams":
        uris = uri_file(work, "4k.txt", [f"{base}/4k/{i}.bin" for i in range(64)])
        load = ["-D", str(args.seconds), "-c", "4", "-m", "32", "-i", uris]
    elif case == "1m":
        uris = uri_file(work, "1m.txt", [f"{base}/1m/{i}.bin" for i in range(64)])
        load = ["-D", str(args.seconds), "-c", "4", "-m", "4", "-i", uris]
    else:
        uris = uri_file(work, "page.txt", [f"{base}/page/{i}.bin" for i in range(PAGE_ASSETS)])
        pages = args.pages
        if case == "page":
            load = ["-n", str(pages * PAGE_ASSETS), "-c", str(pages), "-m", str(PAGE_ASSETS), "-i", uris]
        else:
            load = ["-n", str(pages * PAGE_ASSETS), "-c", str(pages * 6), "-m", "1", "-i", uris]
    m0, p0 = machine_busy(), proc_cpu(server.pid)
    done, secs, failed = h2load(server, load, h1=(case == "page-h1"), env=env)
    # A page run is short: page loads are repeated for the run's seconds.
    while case.startswith("page") and secs < args.seconds:
        d, t, f = h2load(server, load, h1=(case == "page-h1"), env=env)
        done, secs, failed = done + d, secs + t, failed + f
    m1, p1 = machine_busy(), proc_cpu(server.pid)
    per = 1e6 / CLK_TCK / max(done, 1)
    return {"rps": done / secs, "server_us": (p1 - p0) * per, "machine_us": (m1 - m0) * per,
            "failed": failed, "done": done}


def fixture(root):
    make_fixture(root)
    page = os.path.join(root, "page")
    os.makedirs(page, exist_ok=True)
    for i in range(PAGE_ASSETS):
        p = os.path.join(page, f"{i}.bin")
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(os.urandom(4 << 10))
    time.sleep(1.1)  # older than the kept table's one-tick rule


def spread(xs, fmt="{:.1f}"):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nikaia", default="target/release/nikaia")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--pages", type=int, default=50, help="page loads per page run")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--h2c", action="store_true", help="plaintext, prior knowledge")
    ap.add_argument("--case", action="append", help="4k-streams, 1m, page, page-h1 (default: all)")
    args = ap.parse_args()
    if not shutil.which("h2load"):
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    args.nikaia = os.path.abspath(args.nikaia)
    cases = args.case or ["4k-streams", "1m", "page", "page-h1"]
    work = tempfile.mkdtemp(prefix="nikaia-h2bench-")
    os.chmod(work, 0o755)  # nginx's worker runs as another user
    root = os.path.join(work, "root")
    fixture(root)
    mat = tls_material(work)
    env = mat["env"]
    results = {}
    print(f"# h2load, {'h2c' if args.h2c else 'h2 over TLS 1.3 ' + TLS_SUITE}; load {loadavg()}")
    for r in range(args.rounds):
        for case in cases:
            kinds = ["nikaia"] if case == "page-h1" else (["nikaia", "nginx"] if r % 2 == 0 else ["nginx", "nikaia"])
            for kind in kinds:
                s = H2Server(kind, args, root, work, args.h2c)
                s.start()
                try:
                    # One warm-up load, then the measured one.
                    measure(s, case, argparse.Namespace(**{**vars(args), "seconds": 1}), work, env)
                    res = measure(s, case, args, work, env)
                finally:
                    s.stop()
                results.setdefault((case, kind), []).append(res)
                print(f"round {r + 1} {case:11} {kind:7} {res['rps']:9.0f} req/s  server {res['server_us']:6.1f} µs  "
                      f"machine {res['machine_us']:6.1f} µs  failed {res['failed']}", flush=True)
    print("\n| case | server | requests/s | server µs/req | machine µs/req |")
    print("|---|---|---|---|---|")
    for (case, kind), rs in results.items():
        print(f"| {case} | {kind} | {spread([x['rps'] for x in rs], '{:.0f}')} | "
              f"{spread([x['server_us'] for x in rs])} | {spread([x['machine_us'] for x in rs])} |")
    print("\n| case | nikaia/nginx requests/s | nikaia/nginx machine µs/req |")
    print("|---|---|---|")
    for case in cases:
        a, b = results.get((case, "nikaia")), results.get((case, "nginx"))
        if not a or not b:
            continue
        rps = [x["rps"] / y["rps"] for x, y in zip(a, b)]
        cpu = [x["machine_us"] / y["machine_us"] for x, y in zip(a, b)]
        print(f"| {case} | {spread(rps, '{:.2f}')}× | {spread(cpu, '{:.2f}')}× |")
    h1, h2 = results.get(("page-h1", "nikaia")), results.get(("page", "nikaia"))
    if h1 and h2:
        rps = [x["rps"] / y["rps"] for x, y in zip(h2, h1)]
        cpu = [x["machine_us"] / y["machine_us"] for x, y in zip(h2, h1)]
        print(f"| page: nikaia h2 / nikaia h1 ×6 | {spread(rps, '{:.2f}')}× | {spread(cpu, '{:.2f}')}× |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
