#!/usr/bin/env python3
"""nikaia serve beside nginx, one worker each, on loopback.

Measures requests/s, MiB/s, server CPU µs per request (utime+stime of the
server process from /proc/PID/stat) and machine CPU µs per request (non-idle
jiffies of /proc/stat), the median of REPEATS runs with the spread, and
prints the ratios nikaia/nginx. Runs alternate between the servers so drift
hits both. See docs/performance.md for how to read it.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
FILES = 64
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine_busy():
    """Non-idle jiffies over all CPUs (idle and iowait excluded)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = list(map(int, parts))
    return sum(v) - v[3] - v[4]


def proc_cpu(pid):
    """utime+stime jiffies of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def make_fixture(root):
    os.makedirs(root, exist_ok=True)
    page = os.path.join(root, "page.html")
    if not os.path.exists(page):
        with open(page, "wb") as f:
            f.write((b"<p>nikaia</p>\n" * 400)[:4096])
    for name, size in (("4k", 4 << 10), ("64k", 64 << 10), ("1m", 1 << 20)):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        for i in range(FILES):
            p = os.path.join(d, f"{i}.bin")
            if not os.path.exists(p) or os.path.getsize(p) != size:
                with open(p, "wb") as f:
                    f.write(os.urandom(size))
    big = os.path.join(root, "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != 1 << 30:
        with open(big, "wb") as f:
            f.truncate(1 << 30)  # sparse: reads as zeros, from the page cache
    # Old enough for the kept table (it skips files changed in the last tick).
    time.sleep(0.05)


NGINX_CONF = """
worker_processes 1;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    default_type application/octet-stream;
    client_body_temp_path {dir}/tmp;
    proxy_temp_path {dir}/tmp;
    fastcgi_temp_path {dir}/tmp;
    uwsgi_temp_path {dir}/tmp;
    scgi_temp_path {dir}/tmp;
    server {{
        listen 127.0.0.1:{port} reuseport;
        root {root};
    }}
}}
"""


class Server:
    def __init__(self, kind, args, root, workdir, runtime_extra=""):
        self.kind, self.args, self.root, self.workdir = kind, args, root, workdir
        self.runtime_extra = runtime_extra
        self.port = free_port()
        self.proc = None

    def start(self):
        if self.kind == "nginx":
            os.makedirs(os.path.join(self.workdir, "tmp"), exist_ok=True)
            conf = os.path.join(self.workdir, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(dir=self.workdir, port=self.port, root=self.root))
            self.proc = subprocess.Popen(
                [shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", self.workdir],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            rt = os.path.join(self.workdir, f"runtime-{self.port}.toml")
            with open(rt, "w") as f:
                f.write(f'listen = "127.0.0.1:{self.port}"\nworkers = 1\naccess-log = "off"\n'
                        + self.runtime_extra)
            self.proc = subprocess.Popen(
                [self.args.nikaia, "serve", self.root, "--runtime", rt],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"{self.kind} did not start")
        self.pid = self.worker_pid()

    def worker_pid(self):
        if self.kind != "nginx":
            return self.proc.pid
        for _ in range(50):
            out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
            if out:
                return int(out[0])
            time.sleep(0.05)
        raise SystemExit("no nginx worker")

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM if self.kind != "nginx" else signal.SIGQUIT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"


def lua_rotation(prefix):
    path = os.path.join(tempfile.gettempdir(), f"nikaia-bench-{prefix.strip('/')}.lua")
    with open(path, "w") as f:
        f.write(f"""
local i = 0
request = function()
    i = (i % {FILES}) + 1
    return wrk.format("GET", "{prefix}" .. (i - 1) .. ".bin")
end
""")
    return path


def parse_wrk(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    scale = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1, "GB": 1024}[m.group(2)]
    lat = {}
    for p in ("50", "99"):
        mm = re.search(rf"^\s+{p}(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if mm:
            lat[p] = float(mm.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[mm.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"wrk saw errors:\n{out}")
    return rps, float(m.group(1)) * scale, total, lat


def measure(server, url, seconds, conns, script=None):
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    m0, p0, t0 = machine_busy(), proc_cpu(server.pid), time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m1, p1, t1 = machine_busy(), proc_cpu(server.pid), time.time()
    rps, mibs, total, lat = parse_wrk(out)
    us = 1e6 / CLK_TCK
    return {
        "rps": rps,
        "mibs": mibs,
        "server_us": (p1 - p0) * us / total,
        "machine_us": (m1 - m0) * us / total,
        "p50_us": lat.get("50"),
        "p99_us": lat.get("99"),
    }


CASES = [
    ("page 4 KiB (constant)", "/page.html", None),
    ("4 KiB × 64 (named)", None, "/4k/"),
    ("64 KiB × 64 (named)", None, "/64k/"),
    ("1 MiB × 64 (named)", None, "/1m/"),
]


def med(xs):
    return statistics.median(xs)


def cell(xs, fmt="{:.0f}"):
    return f"{fmt.format(med(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def run_pair(args, root, work, a, b, title):
    servers = [a, b]
    results = {s.label: {c[0]: [] for c in CASES} for s in servers}
    for s in servers:
        s.start()
    try:
        for _ in range(args.repeats):
            for name, path, prefix in CASES:
                for s in servers:
                    script = lua_rotation(prefix) if prefix else None
                    url = s.base + (path or "/")
                    measure(s, url, 1, args.conns, script)  # warm-up
                    results[s.label][name].append(measure(s, url, args.seconds, args.conns, script))
    finally:
        for s in servers:
            s.stop()
    lines = [f"### {title}", "",
             f"| case | server | requests/s | MiB/s | server CPU µs/req | machine CPU µs/req |",
             "|---|---|---|---|---|---|"]
    for name, _, _ in CASES:
        for s in servers:
            r = results[s.label][name]
            lines.append(f"| {name} | {s.label} | {cell([x['rps'] for x in r])} | "
                         f"{cell([x['mibs'] for x in r], '{:.1f}')} | "
                         f"{cell([x['server_us'] for x in r], '{:.1f}')} | "
                         f"{cell([x['machine_us'] for x in r], '{:.1f}')} |")
    lines += ["", f"Ratios {a.label}/{b.label} (medians; requests/s above 1.0 and CPU below 1.0 favour {a.label}):", "",
              "| case | requests/s | server CPU/req | machine CPU/req |", "|---|---|---|---|"]
    for name, _, _ in CASES:
        ra, rb = results[a.label][name], results[b.label][name]
        ratio = lambda k: med([x[k] for x in ra]) / med([x[k] for x in rb])
        lines.append(f"| {name} | {ratio('rps'):.2f} | {ratio('server_us'):.2f} | {ratio('machine_us'):.2f} |")
    return "\n".join(lines), results


def fairness(args, root, work, nice, kind="nikaia"):
    """p50/p99 of 4 KiB requests, unloaded and while 4 clients pull 1 GiB.
    With `nice`, the pullers run at nice 19: on a 2-core machine four
    CPU-bound curl processes otherwise take the CPU from the server and the
    load generator, and the p99 measures the kernel's scheduler instead of
    the server's fairness."""
    s = Server(kind, args, root, work)
    s.label = kind
    s.start()
    try:
        url = s.base + "/page.html"
        measure(s, url, 1, 4)
        quiet = [measure(s, url, args.seconds, 4) for _ in range(args.repeats)]
        prefix = "nice -n 19 " if nice else ""
        pullers = [subprocess.Popen(
            ["sh", "-c", f"while :; do {prefix}curl -s -o /dev/null {s.base}/big.bin || exit; done"])
            for _ in range(4)]
        time.sleep(1)
        try:
            loaded = [measure(s, url, args.seconds, 4) for _ in range(args.repeats)]
        finally:
            for p in pullers:
                p.kill()
                p.wait()
    finally:
        s.stop()
    q99, l99 = med([x["p99_us"] for x in quiet]), med([x["p99_us"] for x in loaded])
    title = ("pullers at nice 19" if nice else "pullers at normal priority") + f"; {kind}"
    return "\n".join([
        f"### Fairness: 4 KiB requests while four clients pull a 1 GiB file ({title})", "",
        "| | p50 µs | p99 µs | requests/s |", "|---|---|---|---|",
        f"| unloaded | {cell([x['p50_us'] for x in quiet])} | {cell([x['p99_us'] for x in quiet])} | {cell([x['rps'] for x in quiet])} |",
        f"| 4 × 1 GiB pulls | {cell([x['p50_us'] for x in loaded])} | {cell([x['p99_us'] for x in loaded])} | {cell([x['rps'] for x in loaded])} |",
        "", f"p99 loaded / unloaded: {l99 / q99:.2f}× (target: within 5×)",
    ]), {"quiet": quiet, "loaded": loaded}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nikaia", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--only", choices=["nginx", "pinned", "fairness"], action="append")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "site")
    os.makedirs(work, exist_ok=True)
    make_fixture(root)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# benches/http — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"Machine: {os.cpu_count()} CPUs ({cpu}), Linux {os.uname().release}. "
          f"Load average before: {loadavg()}. wrk -t1 -c{args.conns}, {args.seconds} s per run, "
          f"{args.repeats} runs each, alternating; median (min–max).\n")
    everything = {}
    only = args.only or ["nginx", "pinned", "fairness"]
    if "nginx" in only:
        n = Server("nikaia", args, root, work); n.label = "nikaia"
        g = Server("nginx", args, root, work); g.label = "nginx"
        text, everything["nginx"] = run_pair(args, root, work, n, g, "nikaia serve vs nginx (sendfile on, tcp_nopush, open_file_cache), one worker each")
        print(text + "\n")
    if "pinned" in only:
        a = Server("nikaia", args, root, work); a.label = "auto"
        p = Server("nikaia", args, root, work, 'send-file = "never"\nstatic-cache = 0\n'); p.label = "pinned"
        text, everything["pinned"] = run_pair(args, root, work, a, p, 'nikaia serve: auto vs pinned (send-file = "never", static-cache = 0)')
        print(text + "\n")
    if "fairness" in only:
        for nice in (False, True):
            for kind in ("nikaia", "nginx"):
                text, everything[f"fairness_{kind}_nice{int(nice)}"] = fairness(args, root, work, nice, kind)
                print(text + "\n")
    print(f"Load average after: {loadavg()}.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
