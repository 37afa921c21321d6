#!/usr/bin/env python3
"""Upload throughput and machine CPU per GiB (#34): a body streamed by
nikaia to a sink that throws it away (this crate's `uploads` program,
`POST /up`), beside nginx reading the same body into
`client_body_temp_path` — both one worker, plain and TLS, HTTP/1.1 and
HTTP/2, the client h2load (`-d FILE`, one stream) — in one run.

nginx's `return 204` answers before it reads a body and then throws the
body away as it arrives, which would time nothing; so its `/up` location
reads the whole body first (`proxy_request_buffering on`: into a buffer,
then `client_body_temp_path` past it, `client_body_in_file_only off`) and
then hands the request without its body to a `return 204` location.

Each run: MiB/s (the body over h2load's wall time), machine CPU ms per GiB
(non-idle /proc/stat jiffies, client included: on loopback the kernel's
TCP work moves between client and server), the server's own CPU ms per
GiB. ROUNDS rounds, the servers alternating inside each round; medians,
ranges, and the ratio nikaia/nginx of each round's pair.

--versus BIN measures BIN, a second build of the uploads program (the
build before a change), in nginx's place: the same rounds, the two builds
alternating inside each round, the ratio after/before (after = --server)
of each round's pair.

--relay adds the second measurement: one HTTP/2 stream (h2c) and one
HTTP/1.1 upload to nikaia through relay.py (20 ms each way, at most 3 MiB
in flight each way: what TCP's default 6 MiB window carries over a 40 ms
round trip), side by side in each round.

    benches/uploads/uploads.py --server target/uploads/release/uploads [--gib 1] [--rounds 5] [--relay]
        [--versus BEFORE/uploads]
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "http"))
from bench import CLK_TCK, free_port, machine_busy, proc_cpu  # noqa: E402

NGINX = """
{user}
worker_processes 1;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp;
    proxy_temp_path {dir}/tmp;
    client_max_body_size 0;
    client_body_in_file_only off;
    client_body_timeout 60s;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} {listen};
        {tls}
        location = /up {{
            proxy_request_buffering on;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_pass http://127.0.0.1:{done}/done;
        }}
    }}
    server {{
        listen 127.0.0.1:{done};
        location = /done {{ return 204; }}
    }}
}}
"""

TLS_NGINX = """ssl_certificate {dir}/cert.pem;
        ssl_certificate_key {dir}/key.pem;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;"""


def wait_port(port):
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


class Upstream:
    """One server: nikaia's `uploads` program (kind "nikaia"; "before": the
    --versus build of it) or nginx, plain or TLS, with HTTP/2 on (h2c by
    prior knowledge on plain, ALPN on TLS)."""

    def __init__(self, kind, args, work, tls, h2=True):
        self.kind, self.args, self.work, self.tls, self.h2 = kind, args, work, tls, h2
        self.port = free_port()
        self.proc = None

    def start(self):
        d = os.path.join(self.work, f"{self.kind}-{self.port}")
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        for f in ("cert.pem", "key.pem"):
            shutil.copy(os.path.join(self.work, f), d)
        if self.kind == "nginx":
            # nginx 1.22's plain `listen … http2` speaks only h2c.
            listen = " ".join(w for w, on in (("ssl", self.tls), ("http2", self.h2)) if on)
            # Run as root (a container), the worker must write the temp files
            # under this root-owned directory.
            user = "user root root;" if os.geteuid() == 0 else ""
            conf = NGINX.format(user=user, dir=d, port=self.port, done=free_port(), listen=listen,
                                tls=TLS_NGINX.format(dir=d) if self.tls else "")
            path = os.path.join(d, "nginx.conf")
            open(path, "w").write(conf)
            self.proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", path, "-p", d],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            rt = os.path.join(d, "runtime.toml")
            text = f'listen = "127.0.0.1:{self.port}"\nworkers = 1\naccess-log = "off"\n'
            if self.tls:
                text += 'tls-cert = "cert.pem"\ntls-key = "key.pem"\n'
            open(rt, "w").write(text)
            binary = self.args.versus if self.kind == "before" else self.args.server
            self.proc = subprocess.Popen([binary], env=dict(os.environ, NIKAIA_RUNTIME=rt),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pid = self.worker_pid()

    def worker_pid(self):
        if self.kind != "nginx":
            return self.proc.pid
        for _ in range(50):
            out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                 text=True).stdout.split()
            if out:
                return int(out[0])
            time.sleep(0.05)
        raise SystemExit("no nginx worker")

    def cpu(self):
        """The serving process's CPU jiffies (nginx: its worker)."""
        return proc_cpu(self.pid)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def url(self, port=None):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{port or self.port}/up"


def upload(server, body, h1, port=None):
    """One upload of `body` (a file) by h2load: (seconds, server jiffies,
    machine jiffies), or an error."""
    cmd = ["h2load", "-n", "1", "-c", "1", "-d", body, server.url(port)]
    if h1:
        cmd.insert(1, "--h1")
    m0, s0 = machine_busy(), server.cpu()
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    m1, s1 = machine_busy(), server.cpu()
    text = out.stdout + out.stderr
    ok = re.search(r"requests: 1 total, 1 started, 1 done, 1 succeeded", text)
    codes = re.search(r"status codes: (\d+) 2xx", text)
    if not ok or not codes or codes.group(1) != "1":
        raise SystemExit(f"{server.kind} {cmd}: the upload failed:\n{text}")
    return wall, s1 - s0, m1 - m0


def med(xs):
    return statistics.median(xs)


def cell(xs, fmt="{:.0f}"):
    return f"{fmt.format(med(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def throughput(args, work, body, size):
    gib = size / 2**30
    rows = []
    other = "before" if args.versus else "nginx"
    for tls in (False, True):
        for h1 in (True, False):
            pair = [Upstream(k, args, work, tls, h2=tls or not h1) for k in ("nikaia", other)]
            for s in pair:
                s.start()
            runs = {s.kind: [] for s in pair}
            ratios = {"rate": [], "machine": []}
            try:
                for r in range(args.rounds):
                    order = pair if r % 2 == 0 else pair[::-1]
                    got = {}
                    for s in order:
                        wall, server, machine = upload(s, body, h1)
                        got[s.kind] = (size / 2**20 / wall, machine * 1000 / CLK_TCK / gib,
                                       server * 1000 / CLK_TCK / gib)
                        runs[s.kind].append(got[s.kind])
                    ratios["rate"].append(got["nikaia"][0] / got[other][0])
                    ratios["machine"].append(got["nikaia"][1] / got[other][1])
            finally:
                for s in pair:
                    s.stop()
            label = f"{'TLS' if tls else 'plain'} {'HTTP/1.1' if h1 else 'HTTP/2'}"
            for kind in ("nikaia", other):
                xs = runs[kind]
                rows.append(f"| {label} | {kind} | {cell([x[0] for x in xs])} | "
                            f"{cell([x[1] for x in xs])} | {cell([x[2] for x in xs])} |")
            rows.append(f"| {label} | nikaia/{other} | {cell(ratios['rate'], '{:.2f}')} | "
                        f"{cell(ratios['machine'], '{:.2f}')} | |")
    return rows


def relayed(args, work, body, size):
    """HTTP/1.1 and one HTTP/2 stream to nikaia through relay.py."""
    server = Upstream("nikaia", args, work, False, h2=True)
    server.start()
    relay_port = free_port()
    relay = subprocess.Popen([sys.executable, os.path.join(HERE, "relay.py"), str(relay_port),
                              str(server.port), "20", str(3 << 20)])
    wait_port(relay_port)
    rates = {"h1": [], "h2": []}
    try:
        for r in range(args.rounds):
            for which in (("h1", "h2") if r % 2 == 0 else ("h2", "h1")):
                wall, _, _ = upload(server, body, which == "h1", port=relay_port)
                rates[which].append(size / 2**20 / wall)
    finally:
        relay.terminate()
        server.stop()
    ratio = [b / a for a, b in zip(rates["h1"], rates["h2"])]
    return [f"| HTTP/1.1 through the relay | {cell(rates['h1'], '{:.1f}')} |",
            f"| HTTP/2, one stream, through the relay | {cell(rates['h2'], '{:.1f}')} |",
            f"| HTTP/2 / HTTP/1.1 (same round) | {cell(ratio, '{:.2f}')} |"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="the built uploads program")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--relay", action="store_true")
    ap.add_argument("--versus", metavar="BIN",
                    help="a second build of the uploads program (before), measured in nginx's place")
    ap.add_argument("--relay-mib", type=int, default=256, help="the body through the relay")
    args = ap.parse_args()
    if args.versus:
        args.versus = os.path.abspath(args.versus)
    work = tempfile.mkdtemp(prefix="nikaia-uploads-")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", os.path.join(work, "key.pem"), "-out",
                    os.path.join(work, "cert.pem"), "-days", "7", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    size = int(args.gib * 2**30)
    body = os.path.join(work, "body")
    with open(body, "wb") as f:
        f.write(os.urandom(1 << 20) * (size >> 20))
    print(f"# uploads, {time.strftime('%Y-%m-%d %H:%M')}, {args.gib} GiB body, {args.rounds} rounds, "
          f"{os.cpu_count()} cores; {subprocess.run(['nginx', '-v'], capture_output=True, text=True).stderr.strip()}")
    if args.versus:
        print(f"\nnikaia = {os.path.abspath(args.server)}, before = {args.versus}")
    print()
    print("| case | server | MiB/s | machine CPU ms/GiB | server CPU ms/GiB |")
    print("|---|---|---|---|---|")
    for row in throughput(args, work, body, size):
        print(row, flush=True)
    if args.relay:
        rsize = args.relay_mib << 20
        rbody = os.path.join(work, "relay-body")
        with open(rbody, "wb") as f:
            f.write(os.urandom(1 << 20) * args.relay_mib)
        print()
        print(f"Through relay.py (20 ms each way, 3 MiB in flight each way), {args.relay_mib} MiB:")
        print()
        print("| case | MiB/s |")
        print("|---|---|")
        for row in relayed(args, work, rbody, rsize):
            print(row, flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
