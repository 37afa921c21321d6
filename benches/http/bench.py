#!/usr/bin/env python3
"""nikaia serve beside nginx, one worker each, on loopback.

Measures requests/s, MiB/s, server CPU µs per request (utime+stime of the
server process from /proc/PID/stat) and machine CPU µs per request (non-idle
jiffies of /proc/stat), the median of REPEATS runs with the spread, and
prints the ratios nikaia/nginx. Runs alternate between the servers so drift
hits both. See docs/performance.md for how to read it.

--tls measures HTTPS instead (the plaintext sections run too only when --only
names them): the same certificate for both, TLS 1.3 with
TLS_AES_128_GCM_SHA256, checks once before measuring (bytes, negotiated
parameters, handshakes full and resumed), then keep-alive, Connection: close
and full-handshake cases.

--versus BIN compares two builds of nikaia instead of nikaia and nginx:
--nikaia is "after", BIN "before" (e.g. the same program before a
refactor), plaintext keep-alive 4 KiB × 64 named, page 4 KiB constant and
1 MiB × 64 named, ratios after/before. With --tls too, --versus runs that
plaintext section and then the same comparison over HTTPS instead of nikaia
beside nginx: the --tls certificate, TLS 1.3 and client config for both builds,
keep-alive 4 KiB × 64 named, page 4 KiB constant, 1 MiB × 64 named and 12 KiB
× 64 named (above the kept table's 8 KiB, inside one TLS record), checked
once with curl --cacert (and the parameters with s_client) before measuring.
--wasm compares nikaia serve (Linux)
with its wasm32 build under Node (nikaia_std/wasm/host.cjs, the module from
target/wasm-pkg) on 4 KiB × 64 and 1 MiB × 64 named, ratios wasm/linux;
server CPU is then the node process's. Both check once with curl that the
two answer alike (bodies against the files on disk, status and header fields
but Date and the connection fields), and redo contended runs like --tls.
(benches/http/wasm.py puts the wasm build beside npm's http-server 14.)
--bun adds Bun (npm's bun 1.4, target/bun, as run.sh --bun installs it;
benches/http/bun_server.js: one process, Bun's one JavaScript thread) as a
peer of nikaia serve, nginx and the floor (benches/http/floor.c, as
budget.py builds it) on the page 4 KiB constant and 4 KiB × 64 named cases,
plaintext: the page is a static route answering bytes Bun holds, the named
files `new Response(Bun.file(path))` under the fixture nginx serves. Checked
once with curl (bodies against the files on disk, statuses, a missing name),
then measured in rounds whose order flips round by round, guarded like
--tls; ratios nikaia/bun, nikaia/nginx and nikaia/floor. Server CPU for Bun
is the bun process's (all its threads).
"""

import argparse
import json
import os
import re
import resource
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
WASM_HOST = os.path.normpath(os.path.join(HERE, "..", "..", "nikaia_std", "wasm", "host.cjs"))
BUN_SERVER = os.path.join(HERE, "bun_server.js")
# Where run.sh --bun installs it (npm install --prefix target/bun bun@1.4).
BUN_BINARY = os.path.normpath(os.path.join(HERE, "..", "..", "target", "bun", "node_modules", ".bin", "bun"))


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


def worker_cpu(pid):
    """{tid: utime+stime jiffies} of the threads named nikaia-worker-N."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        if name.startswith("nikaia-worker"):
            fields = text.rsplit(")", 1)[1].split()
            out[tid] = int(fields[11]) + int(fields[12])
    return out


def worker_shares(w0, w1):
    """Each worker's share of the workers' CPU over a run, largest first, in %."""
    used = [w1[t] - w0.get(t, 0) for t in w1]
    total = sum(used)
    return sorted((100.0 * u / total for u in used), reverse=True) if total else []


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def make_fixture(root):
    os.makedirs(root, exist_ok=True)
    page = os.path.join(root, "page.html")
    if not os.path.exists(page):
        with open(page, "wb") as f:
            f.write((b"<p>nikaia</p>\n" * 400)[:4096])
    # 12k: above the kept table's 8 KiB, below a TLS record's 16 KiB (a
    # small answer read from its file).
    for name, size in (("4k", 4 << 10), ("12k", 12 << 10), ("64k", 64 << 10), ("1m", 1 << 20)):
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
    """kind: "nginx", "nikaia" (`binary`, default --nikaia), "node" (the
    wasm32 build of nikaia serve under Node: nikaia_std/wasm/host.cjs) or
    "bun" (benches/http/bun_server.js under --bun-binary).

    `host` (the address nikaia and node listen on and the checks connect
    to), `prefix` (a command the server runs under, e.g. taskset) and
    `workers` (nikaia's; default --workers) are there for netns.py, which
    also rewrites nginx's listen line; here they keep their defaults."""

    host = "127.0.0.1"
    prefix = ()

    def __init__(self, kind, args, root, workdir, runtime_extra="", binary=None):
        self.kind, self.args, self.root, self.workdir = kind, args, root, workdir
        self.runtime_extra = runtime_extra
        self.binary = binary or getattr(args, "nikaia", None)
        self.port = free_port()
        self.proc = None
        self.workers = getattr(args, "workers", 1)

    def nginx_conf(self):
        return NGINX_CONF.format(dir=self.workdir, port=self.port, root=self.root)

    def start(self):
        if self.kind == "nginx":
            os.makedirs(os.path.join(self.workdir, "tmp"), exist_ok=True)
            conf = os.path.join(self.workdir, "nginx.conf")
            with open(conf, "w") as f:
                f.write(self.nginx_conf())
            self.proc = subprocess.Popen(
                [*self.prefix, shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", self.workdir],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif self.kind == "node":
            self.proc = subprocess.Popen(
                [*self.prefix, "node", self.args.wasm_host, self.root, f"{self.host}:{self.port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif self.kind == "bun":
            self.proc = subprocess.Popen(
                [*self.prefix, self.args.bun_binary, BUN_SERVER, self.root, f"{self.host}:{self.port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            rt = os.path.join(self.workdir, f"runtime-{self.port}.toml")
            with open(rt, "w") as f:
                f.write(f'listen = "{self.host}:{self.port}"\nworkers = {self.workers}\n'
                        'access-log = "off"\n' + self.runtime_extra)
            self.proc = subprocess.Popen(
                [*self.prefix, self.binary, "serve", self.root, "--runtime", rt],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection((self.host, self.port), timeout=0.2).close()
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
        return f"http://{self.host}:{self.port}"


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
    m0, p0, w0, t0 = machine_busy(), proc_cpu(server.pid), worker_cpu(server.pid), time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m1, p1, w1, t1 = machine_busy(), proc_cpu(server.pid), worker_cpu(server.pid), time.time()
    rps, mibs, total, lat = parse_wrk(out)
    us = 1e6 / CLK_TCK
    return {
        "worker_shares": worker_shares(w0, w1),
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


# ---------------------------------------------------------------- HTTPS (--tls)
#
# Both servers get the same ECDSA P-256 certificate and speak only TLS 1.3
# with TLS_AES_128_GCM_SHA256 to the clients: nginx because it is configured
# so, nikaia because every client (wrk, s_client, s_time, curl: all OpenSSL)
# reads CLIENT_CNF through OPENSSL_CONF. Checks run once against instances
# that count handshakes (nikaia's stats socket, nginx's $ssl_session_reused
# in an access log); the measured instances log nothing.

TLS_SUITE = "TLS_AES_128_GCM_SHA256"
TLS_CHECK_FILES = ["page.html", "4k/0.bin", "4k/1.bin", "4k/63.bin", "1m/0.bin", "1m/1.bin", "1m/63.bin"]
STIME_CLIENTS = 4
STIME_PATH = "/4k/0.bin"

NGINX_TLS_CONF = """
worker_processes 1;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format tls '$ssl_session_reused $ssl_protocol $ssl_cipher $status';
    {access_log}
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
        listen 127.0.0.1:{port} ssl reuseport;
        root {root};
        ssl_certificate {dir}/cert.pem;
        ssl_certificate_key {dir}/key.pem;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites {suite};
        ssl_session_cache shared:SSL:10m;
        ssl_session_timeout 1h;
        ssl_session_tickets on;
    }}
}}
"""

CLIENT_CNF = """openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1.3
MaxProtocol = TLSv1.3
Ciphersuites = {suite}
Groups = X25519
"""


class TlsServer(Server):
    """A Server on HTTPS; `logged` adds what the checks count by."""

    def __init__(self, kind, args, root, workdir, logged=False, binary=None):
        extra = 'tls-cert = "cert.pem"\ntls-key = "key.pem"\n'
        if logged and kind == "nikaia":
            self.stats = os.path.join(workdir, f"stats-{os.getpid()}.sock")
            extra += f'stats-socket = "{self.stats}"\n'
        super().__init__(kind, args, root, workdir, extra, binary)
        self.label = kind
        self.access_log = os.path.join(workdir, "access.log") if logged and kind == "nginx" else None

    def nginx_conf(self):
        log = f"access_log {self.access_log} tls;" if self.access_log else "access_log off;"
        return NGINX_TLS_CONF.format(dir=self.workdir, port=self.port, root=self.root,
                                     access_log=log, suite=TLS_SUITE)

    @property
    def base(self):
        return f"https://127.0.0.1:{self.port}"

    def handshakes(self):
        """(full, resumed, [protocol+suite seen]) so far."""
        if self.kind == "nikaia":
            out = subprocess.run([self.args.nikaia, "explain", "--socket", self.stats, "--json"],
                                 capture_output=True, text=True, check=True).stdout
            t = json.loads(out)["tls"]
            return t["handshakes_full"], t["handshakes_resumed"], []
        lines = open(self.access_log).read().split("\n") if os.path.exists(self.access_log) else []
        rows = [l.split() for l in lines if l.strip()]
        return (sum(r[0] != "r" for r in rows), sum(r[0] == "r" for r in rows),
                [f"{r[1]} {r[2]}" for r in rows])


def tls_material(work):
    """The certificate both servers present, and the client configurations."""
    os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "OPENSSL_CONF"}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", os.path.join(work, "key.pem"), "-out", os.path.join(work, "cert.pem"),
                    "-days", "7", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, env=env)
    client, aes256 = os.path.join(work, "client.cnf"), os.path.join(work, "client-aes256.cnf")
    with open(client, "w") as f:
        f.write(CLIENT_CNF.format(suite=TLS_SUITE))
    with open(aes256, "w") as f:
        f.write(CLIENT_CNF.format(suite="TLS_AES_256_GCM_SHA384"))
    return {"cert": os.path.join(work, "cert.pem"),
            "env": dict(env, OPENSSL_CONF=client),
            "env_aes256": dict(env, OPENSSL_CONF=aes256),
            "env_system": env}


def tls_versions(nikaia):
    ng = subprocess.run([shutil.which("nginx") or "/usr/sbin/nginx", "-V"], capture_output=True, text=True)
    ng = [l for l in (ng.stderr + ng.stdout).splitlines() if l.startswith(("nginx version", "built with"))]
    ossl = subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout.strip()
    wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    wrk = (wrk.stdout + wrk.stderr).splitlines()[0].strip()
    # The provider is whatever rustls was built with: read it off Cargo.lock.
    provider, rustls = "?", "0.23"
    lock = os.path.join(HERE, "..", "..", "Cargo.lock")
    if os.path.exists(lock):
        m = re.search(r'name = "rustls"\nversion = "([^"]+)"\n(?:[^\[]|\[(?!\[))*?dependencies = \[([^\]]*)\]',
                      open(lock).read())
        if m:
            rustls = ".".join(m.group(1).split(".")[:2])
            deps = m.group(2)
            provider = "aws-lc-rs" if '"aws-lc-rs"' in deps else "ring" if '"ring"' in deps else "?"
    return [f"nginx -V: {' / '.join(ng)}",
            f"openssl version: {ossl}",
            f"wrk: {wrk}",
            f"nikaia: rustls {rustls} with the {provider} provider (TLS 1.3 and 1.2, tickets + session IDs)"]


def s_client(server, env, cert):
    out = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}",
                          "-servername", "localhost", "-CAfile", cert],
                         input="", capture_output=True, text=True, env=env, timeout=20).stdout
    get = lambda rx: (re.search(rx, out, re.M) or [None, "?"])[1]
    r = {"protocol": get(r"^New, (\S+), Cipher is"), "suite": get(r"^New, \S+, Cipher is (\S+)"),
         "kx": get(r"^Server Temp Key: (.+)$"), "verify": "OK" if re.search(r"Verify return code: 0 \(ok\)", out) else "failed"}
    r = {"ok": r["protocol"] != "?" and r["verify"] == "OK", **r}
    return r


def s_client_cell(r):
    return f"{r['protocol']}, {r['suite']}, {r['kx']}, verify {r['verify']}"


def curl_check(server, env, cert, root):
    bad = []
    for name in TLS_CHECK_FILES:
        got = subprocess.run(["curl", "-sS", "--fail", "--cacert", cert, f"{server.base}/{name}"],
                             capture_output=True, env=env).stdout
        with open(os.path.join(root, name), "rb") as f:
            if got != f.read():
                bad.append(name)
    n = len(TLS_CHECK_FILES)
    return f"{n} files identical" if not bad else f"{n - len(bad)} of {n} identical; differ: {', '.join(bad)}"


def children_cpu_us():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1e6


def other_cpu_pct(m0, m1, p0, p1, c0, c1, wall):
    """CPU the machine spent beyond the server and the load generators, in % of
    one core: softirq work of loopback, and anything else running (a build)."""
    us = 1e6 / CLK_TCK
    return max(0.0, ((m1 - m0) * us - (p1 - p0) * us - (c1 - c0)) / (wall * 1e6) * 100)


def wrk_socket_errors(out):
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return sum(map(int, m.groups())) if m else 0


def measure_wrk_tls(server, url, seconds, conns, env, script=None, headers=(), warm_up=False):
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    m0, p0, c0, t0 = machine_busy(), proc_cpu(server.pid), children_cpu_us(), time.time()
    w0 = worker_cpu(server.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    m1, p1, c1, t1 = machine_busy(), proc_cpu(server.pid), children_cpu_us(), time.time()
    w1 = worker_cpu(server.pid)
    rps, mibs, total, lat = parse_wrk(out)
    if total == 0 and warm_up:
        # On a loaded machine a 1 s warm-up can end before any handshake
        # does; the measured run after it is what counts.
        return None
    if total == 0:
        raise SystemExit(f"wrk made no requests to {server.label}:\n{out}")
    us = 1e6 / CLK_TCK
    return {"rps": rps, "mibs": mibs,
            "server_us": (p1 - p0) * us / total, "machine_us": (m1 - m0) * us / total,
            "p50_us": lat.get("50"), "p99_us": lat.get("99"), "socket_errors": wrk_socket_errors(out),
            "other_cpu_pct": other_cpu_pct(m0, m1, p0, p1, c0, c1, t1 - t0),
            "worker_shares": worker_shares(w0, w1)}


def measure_stime(server, seconds, env, cert, clients=STIME_CLIENTS):
    """`clients` parallel `openssl s_time -new`: each makes one full handshake
    after another and fetches STIME_PATH over HTTP/1.0 on each."""
    cmd = ["openssl", "s_time", "-connect", f"127.0.0.1:{server.port}", "-new", "-time", str(seconds),
           "-www", STIME_PATH, "-CAfile", cert]
    m0, p0, c0, t0 = machine_busy(), proc_cpu(server.pid), children_cpu_us(), time.time()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(clients)]
    outs = [p.communicate() for p in procs]
    m1, p1, c1, t1 = machine_busy(), proc_cpu(server.pid), children_cpu_us(), time.time()
    conns = nbytes = 0
    for p, (out, err) in zip(procs, outs):
        m = re.search(r"(\d+) connections in \d+ real seconds, (\d+) bytes read per connection", out)
        if p.returncode != 0 or not m or int(m.group(1)) == 0:
            raise SystemExit(f"s_time against {server.label} failed:\n{out}\n{err}")
        conns += int(m.group(1))
        nbytes += int(m.group(1)) * int(m.group(2))
    us, wall = 1e6 / CLK_TCK, t1 - t0
    return {"rps": conns / wall, "mibs": nbytes / wall / 2**20,
            "server_us": (p1 - p0) * us / conns, "machine_us": (m1 - m0) * us / conns,
            "p50_us": None, "p99_us": None, "socket_errors": 0,
            "other_cpu_pct": other_cpu_pct(m0, m1, p0, p1, c0, c1, wall)}


def wait_quiet(limit_pct, max_wait=300):
    """Waits (up to max_wait s) for a second in which the machine is busy less
    than limit_pct of one core: the servers are idle then, so that is others."""
    deadline = time.time() + max_wait
    while True:
        m0 = machine_busy()
        time.sleep(1)
        busy = (machine_busy() - m0) * 100 / CLK_TCK
        if busy < limit_pct or time.time() > deadline:
            return busy


def guarded(args, run, log):
    """One measured run; redone (after waiting for quiet) while something else
    took more than --max-other % of a core during it."""
    for attempt in range(args.retries + 1):
        wait_quiet(args.max_other, getattr(args, "max_wait", 300))
        r = run()
        if r["other_cpu_pct"] <= args.max_other or attempt == args.retries:
            return r
        log.append(r["other_cpu_pct"])


TLS_CASES = [
    ("4 KiB × 64 (named)", "wrk", "/4k/", ()),
    ("1 MiB × 64 (named)", "wrk", "/1m/", ()),
    ("handshakes: 4 KiB × 64, Connection: close", "wrk", "/4k/", ("Connection: close",)),
    (f"full handshakes: s_time -new ×{STIME_CLIENTS}, 4 KiB", "s_time", None, ()),
]


def tls_checks(args, root, work, mat):
    """Once, before measuring: bytes, negotiated parameters, that the clients
    obey the client configuration, and how many handshakes were resumed."""
    checks = {"curl": [], "s_client with the client config": [], "s_client with the system default config": []}
    res_wrk, res_stime = "wrk -H 'Connection: close', 2 s", f"openssl s_time -new ×{STIME_CLIENTS}, 1 s"
    checks["resumption"] = {res_wrk: {}, res_stime: {}}
    servers = [TlsServer("nikaia", args, root, work, logged=True), TlsServer("nginx", args, root, work, logged=True)]
    if os.path.exists(servers[1].access_log):
        os.remove(servers[1].access_log)
    for s in servers:
        s.start()
    try:
        for s in servers:
            checks["curl"].append(curl_check(s, mat["env"], mat["cert"], root))
            checks["s_client with the client config"].append(s_client(s, mat["env"], mat["cert"]))
            checks["s_client with the system default config"].append(s_client(s, mat["env_system"], mat["cert"]))
        out = subprocess.run(["wrk", "-t1", "-c4", "-d1s", servers[1].base + "/page.html"],
                             capture_output=True, text=True, env=mat["env_aes256"]).stdout
        m = re.search(r"(\d+) requests in", out)
        checks["wrk_aes256_only_to_nginx_requests"] = int(m.group(1)) if m else None
        script = lua_rotation("/4k/")
        for s in servers:
            for key, run in ((res_wrk, lambda: subprocess.run(
                                 ["wrk", "-t1", f"-c{args.conns}", "-d2s", "-H", "Connection: close", "-s", script,
                                  s.base + "/"], capture_output=True, text=True, check=True, env=mat["env"])),
                             (res_stime, lambda: measure_stime(s, 1, mat["env"], mat["cert"]))):
                f0, r0, seen0 = s.handshakes()
                run()
                time.sleep(0.2)
                f1, r1, seen1 = s.handshakes()
                entry = {"full": f1 - f0, "resumed": r1 - r0}
                if s.kind == "nginx":
                    entry["protocol_suite"] = sorted(set(seen1[len(seen0):]))
                checks["resumption"][key][s.label] = entry
    finally:
        for s in servers:
            s.stop()
    return checks


def tls_check_lines(checks, labels):
    cs = "s_client with the client config"
    sd = "s_client with the system default config"
    lines = ["### TLS checks (once, before measuring)", "",
             "Client OpenSSL config (OPENSSL_CONF for wrk and s_client): MinProtocol = MaxProtocol = TLSv1.3, "
             f"Ciphersuites = {TLS_SUITE}, Groups = X25519. Certificate: ECDSA P-256, self-signed, "
             "subjectAltName IP:127.0.0.1, DNS:localhost.", "",
             f"| check | {' | '.join(labels)} |", "|---|---|---|",
             f"| curl --cacert: page.html, 4k/{{0,1,63}}, 1m/{{0,1,63}} | {' | '.join(checks['curl'])} |",
             f"| {cs} | {' | '.join(s_client_cell(r) for r in checks[cs])} |",
             f"| {sd} | {' | '.join(s_client_cell(r) for r in checks[sd])} |"]
    n = checks["wrk_aes256_only_to_nginx_requests"]
    verdict = "refused, as it should" if n == 0 else "NOT refused: wrk does not read OPENSSL_CONF"
    lines.append(f"| wrk offering only TLS_AES_256_GCM_SHA384 (proves wrk reads OPENSSL_CONF) | – | "
                 f"{n} requests ({verdict}) |")
    for key, by in checks["resumption"].items():
        cells = []
        for label in labels:
            e = by[label]
            share = 100 * e["resumed"] / max(1, e["full"] + e["resumed"])
            how = "stats socket" if label == "nikaia" else "$ssl_session_reused; " + ", ".join(e.get("protocol_suite", []))
            cells.append(f"{e['full']} / {e['resumed']} ({share:.1f}% resumed; {how})")
        lines.append(f"| {key}: handshakes full / resumed | {' | '.join(cells)} |")
    return lines


def tls_bench(args, root):
    work = os.path.abspath("target/bench-http/tls")
    mat = tls_material(work)
    versions = tls_versions(args.nikaia)
    print("### TLS versions\n")
    print("\n".join(f"- {v}" for v in versions) + "\n")
    checks = tls_checks(args, root, work, mat)
    print("\n".join(tls_check_lines(checks, ["nikaia", "nginx"])) + "\n")

    servers = [TlsServer("nikaia", args, root, work), TlsServer("nginx", args, root, work)]
    results = {s.label: {c[0]: [] for c in TLS_CASES} for s in servers}
    redone = []
    for s in servers:
        s.start()
    try:
        for _ in range(args.repeats):
            for name, tool, prefix, headers in TLS_CASES:
                for s in servers:
                    if tool == "s_time":
                        def run(s=s):
                            measure_stime(s, 1, mat["env"], mat["cert"])  # warm-up
                            return measure_stime(s, args.seconds, mat["env"], mat["cert"])
                    else:
                        def run(s=s, script=lua_rotation(prefix), headers=headers):
                            url = s.base + "/"
                            measure_wrk_tls(s, url, 1, args.conns, mat["env"], script, headers)  # warm-up
                            return measure_wrk_tls(s, url, args.seconds, args.conns, mat["env"], script, headers)
                    results[s.label][name].append(guarded(args, run, redone))
    finally:
        for s in servers:
            s.stop()

    a, b = servers
    lines = [f"### HTTPS: nikaia serve vs nginx (OpenSSL), one worker each, TLS 1.3 {TLS_SUITE}, "
             "ECDSA P-256, keep-alive unless Connection: close", "",
             "| case | server | requests/s | MiB/s | server CPU µs/req | machine CPU µs/req |",
             "|---|---|---|---|---|---|"]
    for name, *_ in TLS_CASES:
        for s in servers:
            r = results[s.label][name]
            lines.append(f"| {name} | {s.label} | {cell([x['rps'] for x in r])} | "
                         f"{cell([x['mibs'] for x in r], '{:.1f}')} | "
                         f"{cell([x['server_us'] for x in r], '{:.1f}')} | "
                         f"{cell([x['machine_us'] for x in r], '{:.1f}')} |")
    lines += ["", f"Ratios {a.label}/{b.label} (medians; requests/s above 1.0 and CPU below 1.0 favour {a.label}):", "",
              "| case | requests/s | server CPU/req | machine CPU/req |", "|---|---|---|---|"]
    for name, *_ in TLS_CASES:
        ra, rb = results[a.label][name], results[b.label][name]
        ratio = lambda k: med([x[k] for x in ra]) / med([x[k] for x in rb])
        lines.append(f"| {name} | {ratio('rps'):.2f} | {ratio('server_us'):.2f} | {ratio('machine_us'):.2f} |")
    hs = [n for n, *_ in TLS_CASES if "handshakes" in n]
    lines += ["", "Handshakes per second (one handshake per request in these cases), median: " + "; ".join(
        f"{n}: " + ", ".join(f"{s.label} {med([x['rps'] for x in results[s.label][n]]):.0f}" for s in servers)
        for n in hs) + "."]
    lines += ["", "wrk socket errors over all measured TLS runs: " + ", ".join(
        f"{s.label} {sum(x['socket_errors'] for r in results[s.label].values() for x in r)}" for s in servers) + "."]
    others = [x["other_cpu_pct"] for s in servers for r in results[s.label].values() for x in r]
    lines += ["", "CPU spent outside the server and the load generators during measured runs (softirq of "
              f"loopback, and anything else running on the machine), % of one core: {cell(others)}. "
              f"Each run starts after a second in which the machine was busy less than {args.max_other:.0f}% of a "
              f"core, and a run during which more than that went elsewhere is redone (up to {args.retries} times): "
              f"{len(redone)} redone" + (f" (others took {', '.join(f'{x:.0f}' for x in redone)}%)" if redone else "")
              + "."]
    lines += ["", "Notes: neither server uses sendfile under TLS (no kTLS): nginx reads the file into its buffers "
              "and SSL_write()s them, nikaia encrypts through rustls from a kept copy (small files asked for "
              "before) or from pread into the connection's buffer. In the Connection: close case wrk offers the "
              "session it got from the server on every reconnect, so those are mostly resumed handshakes (TLS 1.3 "
              "PSK with X25519, no certificate signature; the checks above count them); the s_time -new case is "
              f"full handshakes (X25519 and an ECDSA P-256 signature) from {STIME_CLIENTS} parallel s_time "
              "processes, each connecting again and again and fetching one 4 KiB file over HTTP/1.0 per "
              "connection. wrk, s_time and curl are all OpenSSL clients, identical for both servers; machine "
              "CPU includes them."]
    print("\n".join(lines) + "\n")
    return {"versions": versions, "checks": checks, "results": results}


# ------------------------------------------- two builds of one server (--versus, --wasm)
#
# Plaintext (or, --versus with --tls, HTTPS as in --tls), keep-alive, wrk -t1
# -c--conns, one worker each, the same fixture;
# each run guarded like the TLS runs (redone while others took the CPU). The
# two servers alternate within each case, and which goes first flips from one
# repeat to the next, so drift and warm caches hit both alike.

VERSUS_CASES = [
    ("4 KiB × 64 (named)", None, "/4k/"),
    ("4 KiB × 64 (named, Connection: close)", None, "/4k/", ("Connection: close",)),
    ("page 4 KiB (constant)", "/page.html", None),
    ("1 MiB × 64 (named)", None, "/1m/"),
]
# --versus --tls: the keep-alive ones (4 KiB named, page constant, 1 MiB named),
# and 12 KiB named: too large to keep, small enough for one TLS record.
VERSUS_TLS_CASES = [c for c in VERSUS_CASES if len(c) == 3] + [("12 KiB × 64 (named, unkept)", None, "/12k/")]


def chosen(args, cases):
    """The cases --case names (all of them without it)."""
    return [c for c in cases if not args.case or any(t in c[0] for t in args.case)]
WASM_CASES = [
    ("4 KiB × 64 (named)", None, "/4k/"),
    ("1 MiB × 64 (named)", None, "/1m/"),
]
CHECK_FILES = ["page.html", "4k/0.bin", "4k/1.bin", "4k/63.bin", "12k/5.bin", "64k/7.bin", "1m/0.bin", "1m/1.bin", "1m/63.bin"]
# Fields that are the host's or the moment's, not the answer's.
HOST_FIELDS = {"date", "connection", "keep-alive"}


def curl_get(url, mat=None):
    """(status line, [header lines but HOST_FIELDS], body) of one GET; with
    `mat` (tls_material) over HTTPS with its certificate and client config."""
    tls = ["--cacert", mat["cert"]] if mat else []
    with tempfile.NamedTemporaryFile() as h:
        body = subprocess.run(["curl", "-sS", *tls, "-D", h.name, url], capture_output=True, check=True,
                              env=mat["env"] if mat else None).stdout
        head = open(h.name, "rb").read().decode("latin-1").split("\r\n")
    fields = [l for l in head[1:] if l and l.split(":", 1)[0].strip().lower() not in HOST_FIELDS]
    return head[0], fields, body


def same_answers(a, b, root, mat=None):
    """Once, before measuring: curl fetches CHECK_FILES (and a missing name)
    from both; the bodies must equal the files on disk and each other, and the
    status lines and header fields (but HOST_FIELDS) each other."""
    rows, ok = [], True
    for name in CHECK_FILES + ["no-such-file.bin"]:
        sa, ha, ba = curl_get(f"{a.base}/{name}", mat)
        sb, hb, bb = curl_get(f"{b.base}/{name}", mat)
        path = os.path.join(root, name)
        disk = open(path, "rb").read() if os.path.exists(path) else None
        body_ok = ba == bb and (disk is None or ba == disk)
        head_ok = sa == sb and ha == hb
        ok &= body_ok and head_ok
        rows.append({"name": name, "status": [sa, sb], "bytes": [len(ba), len(bb)], "body_identical": body_ok,
                     "head_identical": head_ok, "fields": [ha, hb]})
    return ok, rows


def same_answers_lines(a, b, ok, rows, how="curl"):
    lines = [f"### Same answers ({how}, once, before measuring): {a.label} vs {b.label}", "",
             f"| name | status | bytes {a.label} / {b.label} | body (vs each other and the file) | "
             f"status line and header fields but {', '.join(sorted(HOST_FIELDS))} |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['status'][0].split(' ', 1)[1] if ' ' in r['status'][0] else r['status'][0]} | "
                     f"{r['bytes'][0]} / {r['bytes'][1]} | {'identical' if r['body_identical'] else 'DIFFER'} | "
                     f"{'identical' if r['head_identical'] else 'DIFFER: ' + repr(r['fields'])} |")
    lines += ["", "Header fields compared (first file): " + "; ".join(rows[0]["fields"][0]) + "."]
    if not ok:
        lines += ["", "**The answers differ: the measurement below compares different work.**"]
    return lines


def measure_wrk(server, url, seconds, conns, script=None, headers=(), env=None, warm_up=False):
    return measure_wrk_tls(server, url, seconds, conns, env, script, headers, warm_up)


def guarded_pair(args, servers, cases, env=None):
    results = {s.label: {c[0]: [] for c in cases} for s in servers}
    redone = []
    for rep in range(args.repeats):
        for name, path, prefix, *headers in cases:
            headers = headers[0] if headers else ()
            for s in (servers if rep % 2 == 0 else servers[::-1]):
                def run(s=s, url=s.base + (path or "/"), script=lua_rotation(prefix) if prefix else None):
                    measure_wrk(s, url, 1, args.conns, script, headers, env, warm_up=True)
                    return measure_wrk(s, url, args.seconds, args.conns, script, headers, env)
                results[s.label][name].append(guarded(args, run, redone))
                r = results[s.label][name][-1]
                print(f"[{time.strftime('%H:%M:%S')}] {rep + 1}/{args.repeats} {name} {s.label}: {r['rps']:.0f} req/s, "
                      f"others {r['other_cpu_pct']:.0f}%, load {loadavg()}", file=sys.stderr, flush=True)
    return results, redone


def pair_lines(args, title, servers, cases, results, redone, num, den, cpu_note):
    lines = [f"### {title}", "",
             "| case | server | requests/s | MiB/s | server CPU µs/req | machine CPU µs/req |",
             "|---|---|---|---|---|---|"]
    for name, *_ in cases:
        for s in servers:
            r = results[s.label][name]
            lines.append(f"| {name} | {s.label} | {cell([x['rps'] for x in r])} | "
                         f"{cell([x['mibs'] for x in r], '{:.1f}')} | "
                         f"{cell([x['server_us'] for x in r], '{:.1f}')} | "
                         f"{cell([x['machine_us'] for x in r], '{:.1f}')} |")
    lines += [""] + ratio_lines(cases, results, num, den)
    lines += ["", "p50 / p99 latency µs (medians): " + "; ".join(
        f"{name}: " + ", ".join(f"{s.label} {med([x['p50_us'] for x in results[s.label][name]]):.0f} / "
                                f"{med([x['p99_us'] for x in results[s.label][name]]):.0f}" for s in servers)
        for name, *_ in cases) + "."]
    if args.workers > 1:
        def shares(r):
            runs = [x["worker_shares"] for x in r if x.get("worker_shares")]
            return "/".join(f"{med([run[i] for run in runs]):.0f}" for i in range(min(map(len, runs)))) if runs else "?"
        lines += ["", f"Each worker's share of the workers' CPU (threads nikaia-worker-N, /proc/PID/task), busiest "
                  "first, % (medians): " + "; ".join(
                      f"{name}: " + ", ".join(f"{s.label} {shares(results[s.label][name])}" for s in servers)
                      for name, *_ in cases) + "."]
    lines += ["", "wrk socket errors over all measured runs: " + ", ".join(
        f"{s.label} {sum(x['socket_errors'] for r in results[s.label].values() for x in r)}" for s in servers) + "."]
    others = [x["other_cpu_pct"] for s in servers for r in results[s.label].values() for x in r]
    lines += ["", "CPU spent outside the server and the load generator during measured runs (softirq of "
              f"loopback, and anything else running on the machine), % of one core: {cell(others)}. "
              f"Each run starts after a second in which the machine was busy less than {args.max_other:.0f}% of a "
              f"core (or after {args.max_wait:.0f} s of waiting for one), and a run during which more than that went "
              f"elsewhere is redone (up to {args.retries} times): "
              f"{len(redone)} redone" + (f" (others took {', '.join(f'{x:.0f}' for x in redone)}%)" if redone else "")
              + "."]
    lines += ["", cpu_note]
    return lines


def binary_id(path):
    st = os.stat(path)
    h = subprocess.run(["sha256sum", path], capture_output=True, text=True).stdout.split()[0][:16]
    return f"{path} ({st.st_size} bytes, sha256 {h}…, built {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(st.st_mtime))})"


def two_builds(args, root, servers, cases, num, den, title, cpu_note, versions, mat=None):
    """Checks once that both answer alike, then measures them alternately;
    with `mat` (tls_material) over HTTPS, curl and wrk with its certificate
    and client config, and s_client checks the negotiated parameters too."""
    print("### Builds\n")
    print("\n".join(f"- {v}" for v in versions) + "\n")
    hello = None
    for s in servers:
        s.start()
    try:
        ok, rows = same_answers(servers[0], servers[1], root, mat)
        lines = same_answers_lines(servers[0], servers[1], ok, rows,
                                   "curl --cacert, the client config" if mat else "curl")
        if mat:
            hello = [s_client(s, mat["env"], mat["cert"]) for s in servers]
            lines += ["", "Negotiated (openssl s_client with the client config): " + "; ".join(
                f"{s.label} {s_client_cell(r)}" for s, r in zip(servers, hello)) + "."]
        print("\n".join(lines) + "\n")
        if not ok and not args.force:
            raise SystemExit("the two servers answer differently; --force measures anyway")
        if hello and not all(r["ok"] for r in hello) and not args.force:
            raise SystemExit("TLS 1.3 with a verified certificate failed against one; --force measures anyway")
        results, redone = guarded_pair(args, servers, cases, mat["env"] if mat else None)
    finally:
        for s in servers:
            s.stop()
    print("\n".join(pair_lines(args, title, servers, cases, results, redone, num, den, cpu_note)) + "\n")
    out = {"versions": versions, "same_answers": {"ok": ok, "rows": rows}, "results": results,
           "redone_other_cpu_pct": redone}
    if hello:
        out["negotiated"] = hello
    return out


def versus_bench(args, root, work):
    after = Server("nikaia", args, root, work); after.label = "after"
    before = Server("nikaia", args, root, work, binary=args.versus); before.label = "before"
    versions = [f"after (--nikaia): {binary_id(args.nikaia)}", f"before (--versus): {binary_id(args.versus)}"]
    return two_builds(args, root, [after, before], chosen(args, VERSUS_CASES), "after", "before",
                      f"nikaia serve: two builds, {args.workers} worker(s) each (after = --nikaia, before = --versus)",
                      f"Both are the same `nikaia serve ROOT --runtime FILE` with `workers = {args.workers}`, "
                      "`access-log = \"off\"` and the defaults otherwise; machine CPU includes wrk.", versions)


def versus_tls_bench(args, root):
    """--versus with --tls: the two builds over HTTPS, as tls_bench sets it up."""
    work = os.path.abspath("target/bench-http/tls")
    mat = tls_material(work)
    after = TlsServer("nikaia", args, root, work); after.label = "after"
    before = TlsServer("nikaia", args, root, work, binary=args.versus); before.label = "before"
    versions = [f"after (--nikaia): {binary_id(args.nikaia)}", f"before (--versus): {binary_id(args.versus)}"]
    versions += [v for v in tls_versions(args.nikaia) if v.startswith(("openssl", "wrk"))]
    return two_builds(args, root, [after, before], chosen(args, VERSUS_TLS_CASES), "after", "before",
                      f"HTTPS: nikaia serve, two builds, {args.workers} worker(s) each (after = --nikaia, "
                      f"before = --versus), TLS 1.3 {TLS_SUITE}, ECDSA P-256, keep-alive",
                      f"Both are the same `nikaia serve ROOT --runtime FILE` with `workers = {args.workers}`, "
                      "`access-log = \"off\"`, `tls-cert`/`tls-key` the same certificate and the defaults "
                      "otherwise; wrk and curl read the --tls client config (OPENSSL_CONF: TLS 1.3 only, "
                      f"{TLS_SUITE}, X25519). Neither uses sendfile under TLS; machine CPU includes wrk.",
                      versions, mat)


def wasm_bench(args, root, work):
    linux = Server("nikaia", args, root, work); linux.label = "linux"
    wasm = Server("node", args, root, work); wasm.label = "wasm"
    # host.cjs loads the module from $CARGO_TARGET_DIR/wasm-pkg, or else
    # ../../target/wasm-pkg beside itself (as build.sh writes it).
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(args.wasm_host), "..", "..", "target")
    pkg = os.path.normpath(os.path.join(target, "wasm-pkg", "nikaia_wasm_bg.wasm"))
    if not os.path.exists(pkg):
        raise SystemExit(f"no {pkg}: run nikaia_std/wasm/build.sh first")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    versions = [f"linux: {binary_id(args.nikaia)}, `nikaia serve`, workers = 1, access-log off",
                f"wasm: node {node} {args.wasm_host} with {binary_id(pkg)}"]
    return two_builds(args, root, [linux, wasm], WASM_CASES, "wasm", "linux",
                      "nikaia serve on Linux (one worker) vs its wasm32 build under Node (node:http, one process)",
                      "Server CPU for wasm is the node process's utime+stime (all its threads: the main thread "
                      "that runs the module and node:http, libuv's and V8's helpers); for linux the nikaia "
                      "process's. Machine CPU includes wrk.", versions)


# ------------------------------------------------------------ Bun (--bun)
#
# nikaia serve, the held page (examples/held.rs, with --held), nginx, Bun
# and the floor on the two small cases, plaintext,
# keep-alive, wrk -t1 -c--conns, one worker (one JavaScript thread for Bun);
# rounds as --versus runs them (order flipped round by round, each run
# guarded). The floor is budget.py's: one prebuilt answer of 4096 bytes of
# 'x' for every path, a reference rather than a peer that answers files.

BUN_CASES = [
    ("page 4 KiB (constant)", "/page.html", None),
    ("4 KiB × 64 (named)", None, "/4k/"),
]
BUN_CHECK_FILES = ["page.html", "4k/0.bin", "4k/1.bin", "4k/63.bin"]


def bun_version(binary):
    run = lambda flag: subprocess.run([binary, flag], capture_output=True, text=True).stdout.strip()
    return f"bun {run('--revision') or run('--version')}"


def same_bodies(servers, root):
    """Once, before measuring: curl fetches BUN_CHECK_FILES and a missing
    name from each server; the bodies must equal the files on disk and the
    statuses be 200 (404 for the missing name). Header fields differ from
    server to server (each has its own); the Content-Type is reported."""
    rows, ok = [], True
    for name in BUN_CHECK_FILES + ["no-such-file.bin"]:
        path = os.path.join(root, name)
        disk = open(path, "rb").read() if os.path.exists(path) else None
        got = {s.label: curl_get(f"{s.base}/{name}") for s in servers}
        status = {label: (g[0].split(" ") + ["?"])[1] for label, g in got.items()}
        ctype = {label: next((f.split(":", 1)[1].strip() for f in g[1]
                              if f.lower().startswith("content-type:")), "—") for label, g in got.items()}
        if disk is None:
            body_ok, status_ok = None, all(v == "404" for v in status.values())
        else:
            body_ok, status_ok = all(g[2] == disk for g in got.values()), all(v == "200" for v in status.values())
        ok &= status_ok and body_ok is not False
        rows.append({"name": name, "status": status, "bytes": {label: len(g[2]) for label, g in got.items()},
                     "content_type": ctype, "body_identical": body_ok, "status_ok": status_ok})
    return ok, rows


def same_bodies_lines(servers, ok, rows):
    labels = " / ".join(s.label for s in servers)
    lines = [f"### Same answers (curl, once, before measuring): {', '.join(s.label for s in servers)}", "",
             f"| name | status {labels} | bytes {labels} | body (vs the file on disk) | Content-Type {labels} |",
             "|---|---|---|---|---|"]
    for r in rows:
        body = "—" if r["body_identical"] is None else "identical" if r["body_identical"] else "DIFFER"
        lines.append(f"| {r['name']} | {' / '.join(r['status'].values())}{'' if r['status_ok'] else ' (WRONG)'} | "
                     f"{' / '.join(str(v) for v in r['bytes'].values())} | {body} | "
                     f"{' / '.join(r['content_type'].values())} |")
    if not ok:
        lines += ["", "**The answers differ: the measurement below compares different work.**"]
    return lines


def ratio_lines(cases, results, num, den):
    lines = [f"Ratios {num}/{den} (medians; requests/s above 1.0 and CPU below 1.0 favour {num}):", "",
             "| case | requests/s | MiB/s | server CPU/req | machine CPU/req |", "|---|---|---|---|---|"]
    for name, *_ in cases:
        ra, rb = results[num][name], results[den][name]
        ratio = lambda k: med([x[k] for x in ra]) / med([x[k] for x in rb])
        lines.append(f"| {name} | {ratio('rps'):.2f} | {ratio('mibs'):.2f} | {ratio('server_us'):.2f} | "
                     f"{ratio('machine_us'):.2f} |")
    return lines


def bun_bench(args, root, work):
    if not (os.path.isfile(args.bun_binary) and os.access(args.bun_binary, os.X_OK)):
        raise SystemExit(f"no bun at {args.bun_binary}: benches/http/run.sh … --bun installs it "
                         "(npm install --prefix target/bun bun@1.4), or give --bun-binary")
    import budget  # the floor (budget imports this module: imported here, not at the top)
    floor = budget.Floor(args, root, work, 4096, budget.build_floor(work)); floor.label = "floor"
    n = Server("nikaia", args, root, work); n.label = "nikaia"
    g = Server("nginx", args, root, work); g.label = "nginx"
    b = Server("bun", args, root, work); b.label = "bun"
    servers, peers = [n, g, b, floor], [n, g, b]
    if args.held:
        # The same files; /page.html is bytes the program holds (D1's
        # constant answer), as Bun's static route holds it.
        h = Server("nikaia", args, root, work, binary=args.held); h.label = "held"
        servers.insert(1, h)
        peers.insert(1, h)
    ng = subprocess.run([shutil.which("nginx") or "/usr/sbin/nginx", "-v"], capture_output=True, text=True)
    wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    versions = [f"nikaia: {binary_id(args.nikaia)}, `nikaia serve`, workers = {args.workers}, access-log off",
                *([f"held: {binary_id(args.held)}, nikaia_std/examples/held.rs (/page.html held as html::Raw, "
                   f"the rest as nikaia serve), workers = {args.workers}, access-log off"] if args.held else []),
                f"nginx: {(ng.stderr + ng.stdout).strip()}, one worker (the bench's configuration: sendfile on, "
                "tcp_nopush, open_file_cache)",
                f"bun: {bun_version(args.bun_binary)} ({args.bun_binary}), benches/http/bun_server.js, one process",
                "floor: benches/http/floor.c (cc -O2), one prebuilt answer of 4096 bytes for every path",
                f"wrk: {(wrk.stdout + wrk.stderr).splitlines()[0].strip()}"]
    print("### Versions\n")
    print("\n".join(f"- {v}" for v in versions) + "\n")
    cases = chosen(args, BUN_CASES)
    started = []
    try:
        for s in servers:
            s.start()
            started.append(s)
        ok, rows = same_bodies(peers, root)
        print("\n".join(same_bodies_lines(peers, ok, rows)) + "\n")
        if not ok and not args.force:
            raise SystemExit("the servers answer differently; --force measures anyway")
        results, redone = guarded_pair(args, servers, cases)
    finally:
        for s in started:
            s.stop()
    lines = pair_lines(args, f"nikaia serve, nginx, Bun and the floor: one worker each (Bun: one JavaScript "
                             "thread), plaintext, keep-alive", servers, cases, results, redone, "nikaia", "bun",
                       "Server CPU is the utime+stime of nikaia's process, nginx's worker process, the bun process "
                       "(all its threads: the JavaScript thread, and Bun's pool, GC-helper and allocator threads) "
                       "and the floor's process; machine CPU includes wrk. The constant page is, for Bun, bytes "
                       "held in a static route (answered without calling into JavaScript); nikaia answers "
                       "/page.html from its kept table, nginx from the file (open_file_cache, sendfile); the "
                       "named files are Bun.file(path) from the fetch handler. The floor answers 4096 bytes of "
                       "'x' with one writev whatever the path.")
    at = next(i for i, l in enumerate(lines) if l.startswith("p50 / p99"))
    extra = []
    for den in ("nginx", "floor"):
        extra += ratio_lines(cases, results, "nikaia", den) + [""]
    if args.held:
        for den in ("bun", "floor", "nikaia"):
            extra += ratio_lines(cases, results, "held", den) + [""]
    lines[at:at] = extra
    print("\n".join(lines) + "\n")
    return {"versions": versions, "same_answers": {"ok": ok, "rows": rows}, "results": results,
            "redone_other_cpu_pct": redone}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nikaia", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1,
                    help="workers of each nikaia serve (nginx keeps one)")
    ap.add_argument("--only", choices=["nginx", "pinned", "fairness"], action="append")
    ap.add_argument("--tls", action="store_true",
                    help="HTTPS: nikaia vs nginx, TLS 1.3 only (plaintext sections run only if --only names them); "
                         "with --versus, the two builds over HTTPS instead of nginx")
    ap.add_argument("--versus", metavar="BIN",
                    help="plaintext: --nikaia (after) vs this second nikaia binary (before), instead of nginx; "
                         "with --tls, then over HTTPS too")
    ap.add_argument("--no-plain", action="store_true",
                    help="with --versus --tls: only the HTTPS comparison, not the plaintext one first")
    ap.add_argument("--wasm", action="store_true",
                    help="plaintext: nikaia serve (Linux) vs its wasm32 build under Node (target/wasm-pkg)")
    ap.add_argument("--wasm-host", default=WASM_HOST,
                    help="--wasm: the Node host (default: this tree's nikaia_std/wasm/host.cjs)")
    ap.add_argument("--bun", action="store_true",
                    help="plaintext: nikaia serve, nginx, Bun (benches/http/bun_server.js) and the floor on the "
                         "page 4 KiB constant and 4 KiB × 64 named cases (other sections run only if --only names them)")
    ap.add_argument("--held", metavar="BIN",
                    help="--bun: also this build of nikaia_std/examples/held.rs (the page held in memory)")
    ap.add_argument("--bun-binary", default=BUN_BINARY if os.path.exists(BUN_BINARY) else shutil.which("bun") or BUN_BINARY,
                    help="--bun: the bun executable (default: target/bun/node_modules/.bin/bun, as run.sh --bun "
                         "installs it, else bun on PATH)")
    ap.add_argument("--force", action="store_true",
                    help="--versus, --wasm, --bun: measure even if the servers answer differently")
    ap.add_argument("--max-other", type=float, default=20,
                    help="--tls, --versus, --wasm, --bun: redo a run if other processes took more than this %% of a core")
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--max-wait", type=float, default=300,
                    help="seconds to wait for a quiet second before each guarded run, at most")
    ap.add_argument("--case", action="append", metavar="TEXT",
                    help="--versus, --bun: only the cases whose name contains TEXT (repeatable)")
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
    only = args.only or ([] if args.tls or args.versus or args.wasm or args.bun else ["nginx", "pinned", "fairness"])
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
    if args.tls and not args.versus:
        everything["tls"] = tls_bench(args, root)
    if args.versus:
        if not (args.tls and args.no_plain):
            everything["versus"] = versus_bench(args, root, work)
        if args.tls:
            everything["versus_tls"] = versus_tls_bench(args, root)
    if args.wasm:
        everything["wasm"] = wasm_bench(args, root, work)
    if args.bun:
        everything["bun"] = bun_bench(args, root, work)
    print(f"Load average after: {loadavg()}.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
