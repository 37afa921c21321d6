#!/usr/bin/env python3
"""WebDAV beside nginx (dav + dav-ext) and rclone `serve webdav` (#49,
"Benchmarks"): a PROPFIND Depth 1 of a directory of 10 000 files and a COPY
of a 1 GiB file, each server serving the same tree on the same file system,
one worker each, side by side in one run.

Servers (--servers picks; all by default):

  nginx        Debian's nginx 1.22 (nginx-light) with the dav module
               (`dav_methods PUT DELETE MKCOL COPY MOVE`) and dav-ext
               (libnginx-mod-http-dav-ext: `dav_ext_methods PROPFIND
               OPTIONS`), `worker_processes` --workers, access log off
  rclone       rclone `serve webdav` (Go, golang.org/x/net/webdav over
               rclone's VFS, --vfs-cache-mode off: the default),
               GOMAXPROCS=--workers
  nikaia       `nikaia serve TREE --runtime R.toml`: top-level `webdav =
               true`, one `[[write]]` rule over `**` with `webdav = true`,
               `anyone = true`, `durability = "data"` (the default),
               `workers` = --workers, access log off
  nikaia-none  the same with `durability = "none"`: like for like with
               nginx and rclone, which sync nothing a COPY writes

No server asks for credentials (nikaia's rule says `anyone = true`), so no
password check is timed. If nikaia answers PROPFIND with 405 (its WebDAV
methods not built yet) or refuses the runtime file, it is skipped with a
message saying so, and the run goes on with the others.

Operations, each one request on a fresh connection from this process
(http.client; its CPU is counted as the client's):

  propfind-allprop  PROPFIND /many/, Depth 1, body <allprop/>: 10 000 files
                    and the collection, 10 001 <response>s counted
  propfind-named    the same asking for resourcetype, getcontentlength,
                    getlastmodified and getetag
  copy              COPY /big.bin to /big-copy.bin (new name, Overwrite: T):
                    201, and the copy's size checked (its bytes compared with
                    the source's once per server, outside the timing). The
                    copy is deleted after each round, then the file system is
                    synced and the machine left quiet for a moment, outside
                    the timing. The source stays in the page cache (read
                    once before the runs).

Figures per operation: wall time (request sent to last byte read), machine
CPU (every CPU's non-idle time from /proc/stat: the client, the kernel's
work for both, and anything else running), server CPU (utime + stime of the
server's process and its children, all threads, from /proc/PID/stat), and
for COPY the time to durable: the wall time plus a syncfs(2) of the tree's
file system right after the answer (what nginx, rclone and nikaia-none leave
to the kernel's writeback is paid there; nikaia's `data` durability has
paid it before answering). Each round runs every (server, op) once, in an
order rotated by one each round; the report gives medians with (min–max)
and nikaia's ratios to nginx and to rclone within the same round.

    python3 benches/webdav/bench.py --nikaia target/release/nikaia \
        [--rounds 7] [--copy-rounds 5] [--servers nginx,rclone,nikaia,nikaia-none] \
        [--ops propfind-allprop,propfind-named,copy] [--dir /var/tmp/nikaia-dav-bench] \
        [--out benches/webdav/results/DATE.md] [--json FILE]
"""

import argparse
import ctypes
import http.client
import json
import os
import platform
import random
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

ALL_SERVERS = ["nginx", "rclone", "nikaia", "nikaia-none"]
ALL_OPS = ["propfind-allprop", "propfind-named", "copy"]
BIG = "big.bin"
COPY_TO = "big-copy.bin"
MANY = "many"

PROPFIND_BODIES = {
    "propfind-allprop": b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>\n',
    "propfind-named": b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/>'
    b"<D:getlastmodified/><D:getetag/></D:prop></D:propfind>\n",
}
RESPONSE = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?response[\s>]")

DURABILITY = {
    "nginx": "none: the copy is written in place under its name (open O_TRUNC, 64 KiB "
    "writes), no fsync, no rename (strace: README)",
    "rclone": "none: the copy is written in place under its name (open O_TRUNC), no fsync, "
    "no rename (strace: README)",
    "nikaia": 'data: the copy is fdatasync\'d before it is named (`durability = "data"`)',
    "nikaia-none": 'none: `durability = "none"`, nothing synced',
}


class Skip(Exception):
    """A server that cannot be measured here, and why."""


def machine_busy():
    """Non-idle jiffies of the whole machine (/proc/stat's cpu line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    return user + nice + system + irq + softirq + steal


def tree_cpu(pid):
    """utime + stime jiffies of `pid` and its descendants (all threads)."""
    parent, ticks = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2 :].split()
        parent[int(d)] = int(rest[1])
        ticks[int(d)] = int(rest[11]) + int(rest[12])
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += ticks.get(p, 0)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return total


def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


_libc = ctypes.CDLL(None, use_errno=True)


def syncfs(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs")
    finally:
        os.close(fd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, name, log):
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise Skip(f"{name} exited at start ({proc.returncode}): {tail(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Skip(f"{name} did not listen on {port} within 15 s: {tail(log)}")


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.strip() for line in f.readlines()[-n:])
    except OSError:
        return "(no log)"


def fs_of(path):
    out = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE,FSTYPE,TARGET", "-T", path], capture_output=True, text=True
    )
    return " ".join(out.stdout.split()) or subprocess.run(
        ["stat", "-f", "-c", "%T", path], capture_output=True, text=True
    ).stdout.strip()


# The fixture -------------------------------------------------------------


def make_fixture(base, files, copy_mib):
    """base/tree/many/ with `files` small files, base/tree/big.bin of
    `copy_mib` MiB of random bytes; kept between runs (a stamp says what)."""
    tree = os.path.join(base, "tree")
    stamp = os.path.join(base, f"fixture-{files}-{copy_mib}")
    if os.path.exists(stamp):
        return tree
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(tree, MANY))
    rng = random.Random(49)
    for i in range(files):
        with open(os.path.join(tree, MANY, f"file-{i:05}.txt"), "wb") as f:
            f.write(rng.randbytes(rng.randrange(0, 4096)))
    block = os.urandom(1 << 20)
    with open(os.path.join(tree, BIG), "wb") as f:
        for i in range(copy_mib):
            # Each MiB differs (its index in front), no file system can
            # share blocks between them.
            f.write(i.to_bytes(8, "little") + block[8:])
    syncfs(tree)
    open(stamp, "w").close()
    return tree


def warm(path):
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(8 << 20), fb.read(8 << 20)
            if x != y:
                return False
            if not x:
                return True


# The servers -------------------------------------------------------------


class Server:
    def __init__(self, name, proc, port, log):
        self.name, self.proc, self.port, self.log = name, proc, port, log

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if self.name != "nginx" else signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


NGINX_MODULE = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"


def start_nginx(tree, work, workers):
    port = free_port()
    d = os.path.join(work, "nginx")
    os.makedirs(os.path.join(d, "body"), exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = f"""{user}worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
load_module {NGINX_MODULE};
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        root {tree};
        location / {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
            dav_access user:rw group:rw all:r;
        }}
    }}
}}
"""
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    log = os.path.join(d, "stderr.log")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(
        [nginx, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e", os.path.join(d, "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )
    wait_port(port, proc, "nginx", log)
    return Server("nginx", proc, port, log)


def start_rclone(tree, work, workers):
    port = free_port()
    log = os.path.join(work, "rclone.log")
    env = dict(os.environ, GOMAXPROCS=str(workers), RCLONE_CONFIG=os.path.join(work, "rclone.conf"))
    proc = subprocess.Popen(
        ["rclone", "serve", "webdav", tree, "--addr", f"127.0.0.1:{port}", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        env=env,
    )
    wait_port(port, proc, "rclone", log)
    return Server("rclone", proc, port, log)


def nikaia_runtime(port, workers, durability):
    return f"""listen = "127.0.0.1:{port}"
workers = {workers}
access-log = "off"
webdav = true

[[write]]
match = ["**"]
anyone = true
create = true
replace = true
delete = true
delete-dirs = true
webdav = true
plain-http = true
max-size = "2GiB"
durability = "{durability}"
"""


def start_nikaia(name, binary, tree, work, workers):
    if not binary:
        raise Skip("no --nikaia binary given")
    durability = "none" if name == "nikaia-none" else "data"
    port = free_port()
    rt = os.path.join(work, f"{name}.toml")
    with open(rt, "w") as f:
        f.write(nikaia_runtime(port, workers, durability))
    log = os.path.join(work, f"{name}.log")
    proc = subprocess.Popen(
        [binary, "serve", tree, "--runtime", rt],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )
    try:
        wait_port(port, proc, name, log)
    except Skip as e:
        with open(log, errors="replace") as f:
            text = f.read()
        if "webdav" in text:
            first = next(line for line in text.splitlines() if "webdav" in line)
            raise Skip(
                f"{binary} refuses the WebDAV keys of #49 (not built there): "
                f"{first.split(': ', 1)[-1].split('; the ')[0]}"
            ) from None
        raise Skip(f"{e} (its runtime file: {rt})") from None
    server = Server(name, proc, port, log)
    status, _, _ = request(port, "PROPFIND", "/", {"Depth": "0"}, b"")
    if status in (405, 501):
        server.stop()
        raise Skip(
            f"{name} answers PROPFIND with {status}: its WebDAV methods (#49) are not "
            f"built in {binary}; nothing measured for it"
        )
    return server


# One request -------------------------------------------------------------


def request(port, method, path, headers, body):
    """(status, response headers, body bytes) of one request on a fresh
    connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        conn.close()


def measure(server, op, tree, files):
    """One operation: a dict of its figures."""
    hz = os.sysconf("SC_CLK_TCK")
    pid = server.proc.pid
    if op == "copy":
        headers = {
            "Destination": f"http://127.0.0.1:{server.port}/{COPY_TO}",
            "Overwrite": "T",
        }
        method, path, body = "COPY", f"/{BIG}", b""
    else:
        headers = {"Depth": "1", "Content-Type": 'application/xml; charset="utf-8"'}
        method, path, body = "PROPFIND", f"/{MANY}/", PROPFIND_BODIES[op]
    srv0, busy0, own0 = tree_cpu(pid), machine_busy(), own_cpu()
    t0 = time.perf_counter()
    status, rh, data = request(server.port, method, path, headers, body)
    wall = time.perf_counter() - t0
    busy1, own1, srv1 = machine_busy(), own_cpu(), tree_cpu(pid)
    row = {
        "wall": wall,
        "machine_cpu": (busy1 - busy0) / hz,
        "server_cpu": (srv1 - srv0) / hz,
        "client_cpu": own1 - own0,
        "status": status,
        "bytes": len(data),
        "chunked": rh.get("transfer-encoding", "") == "chunked",
    }
    if op == "copy":
        # 201 for a new name (RFC 4918 §9.8.5); nginx answers 204.
        if status not in (201, 204):
            raise RuntimeError(f"{server.name}: COPY answered {status}: {data[:300]!r}")
        t1 = time.perf_counter()
        syncfs(tree)
        row["to_durable"] = wall + time.perf_counter() - t1
        row["machine_cpu_to_durable"] = (machine_busy() - busy0) / hz
        size = os.stat(os.path.join(tree, COPY_TO)).st_size
        if size != os.stat(os.path.join(tree, BIG)).st_size:
            raise RuntimeError(f"{server.name}: the copy has {size} bytes")
    else:
        if status != 207:
            raise RuntimeError(f"{server.name}: PROPFIND answered {status}: {data[:300]!r}")
        n = len(RESPONSE.findall(data))
        row["responses"] = n
        if n != files + 1:
            raise RuntimeError(f"{server.name}: {op} gave {n} <response>s, not {files + 1}")
    return row


def settle(tree, quiet_s):
    """Outside the timing: the copy removed, the file system synced, a
    quiet moment."""
    try:
        os.unlink(os.path.join(tree, COPY_TO))
    except FileNotFoundError:
        pass
    syncfs(tree)
    time.sleep(quiet_s)


# The report --------------------------------------------------------------


def spread(xs, fmt):
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}–{fmt(max(xs))})"


def ms(x):
    return f"{x * 1000:.0f}" if x >= 0.1 else f"{x * 1000:.1f}"


def ratio(x):
    return f"{x:.2f}"


def report(args, runs, servers, skipped, facts):
    out = []
    p = out.append
    p(f"# WebDAV: PROPFIND Depth 1 and COPY beside nginx and rclone ({facts['date']})\n")
    p(f"Machine: {facts['cpus']} CPUs ({facts['cpu_model']}), Linux {facts['kernel']}; "
      f"load average {facts['load_before']} before, {facts['load_after']} after.")
    p(f"Tree: `{facts['tree']}` on {facts['fs']} (the same for every server).")
    p(f"Versions: {facts['versions']}.")
    p(f"Command: `{facts['command']}`\n")
    p(f"Rounds: {args.rounds} of each PROPFIND, {args.copy_rounds} of COPY; workers {args.workers} "
      "each; one request per fresh connection from one Python client on loopback; "
      "medians (min–max). Machine CPU is every CPU's non-idle time (/proc/stat), the "
      "client's included; server CPU is the server's processes' utime + stime.\n")
    for name, why in skipped.items():
        p(f"**Skipped: {name}** — {why}\n")
    p("Durability of each server's COPY:\n")
    for s in servers:
        p(f"- {s}: {DURABILITY[s]}")
    p("")
    for op in args.ops:
        cells = [s for s in servers if (s, op) in runs]
        if not cells:
            continue
        p(f"## {op}\n")
        if op == "copy":
            p(f"COPY /{BIG} ({args.copy_mib} MiB) to /{COPY_TO}, Overwrite: T, new name.\n")
            p("| server | wall ms | to durable ms (+ syncfs) | machine CPU ms | "
              "machine CPU ms to durable | server CPU ms |")
            p("|---|---|---|---|---|---|")
            for s in cells:
                r = runs[(s, op)]
                p(f"| {s} | {spread([x['wall'] for x in r], ms)} | "
                  f"{spread([x['to_durable'] for x in r], ms)} | "
                  f"{spread([x['machine_cpu'] for x in r], ms)} | "
                  f"{spread([x['machine_cpu_to_durable'] for x in r], ms)} | "
                  f"{spread([x['server_cpu'] for x in r], ms)} |")
        else:
            p(f"PROPFIND /{MANY}/ Depth 1 ({args.files} files + the collection), "
              f"body: `{PROPFIND_BODIES[op].decode().splitlines()[1]}`\n")
            p("| server | wall ms | machine CPU ms | server CPU ms | client CPU ms | "
              "body KiB | chunked |")
            p("|---|---|---|---|---|---|---|")
            for s in cells:
                r = runs[(s, op)]
                p(f"| {s} | {spread([x['wall'] for x in r], ms)} | "
                  f"{spread([x['machine_cpu'] for x in r], ms)} | "
                  f"{spread([x['server_cpu'] for x in r], ms)} | "
                  f"{spread([x['client_cpu'] for x in r], ms)} | "
                  f"{statistics.median([x['bytes'] for x in r]) / 1024:.0f} | "
                  f"{'yes' if r[0]['chunked'] else 'no'} |")
        p("")
        ours = [s for s in cells if s.startswith("nikaia")]
        theirs = [s for s in cells if not s.startswith("nikaia")]
        if ours and theirs:
            keys = [("wall", "wall"), ("machine_cpu", "machine CPU"), ("server_cpu", "server CPU")]
            if op == "copy":
                keys.insert(1, ("to_durable", "to durable"))
            p("Ratios, same round, median (min–max):\n")
            p("| ratio | " + " | ".join(label for _, label in keys) + " |")
            p("|---|" + "---|" * len(keys))
            for a in ours:
                for b in theirs:
                    cols = []
                    for k, _ in keys:
                        xs = [x[k] / y[k] for x, y in zip(runs[(a, op)], runs[(b, op)]) if y[k] > 0]
                        cols.append(spread(xs, ratio) if xs else "–")
                    p(f"| {a} / {b} | " + " | ".join(cols) + " |")
            p("")
    return "\n".join(out)


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        text = (out.stdout + out.stderr).strip().splitlines()
        return text[0] if text else "?"
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nikaia", help="the nikaia binary (release)")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--ops", default=",".join(ALL_OPS))
    ap.add_argument("--rounds", type=int, default=7, help="rounds of each PROPFIND")
    ap.add_argument("--copy-rounds", type=int, default=5, help="rounds of COPY")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--copy-mib", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--quiet-s", type=float, default=1.0, help="pause after each COPY's cleanup")
    ap.add_argument("--dir", default="/var/tmp/nikaia-dav-bench",
                    help="the fixture (kept between runs) and the servers' scratch files")
    ap.add_argument("--out", help="write the report here too")
    ap.add_argument("--json", help="write every round's figures here")
    args = ap.parse_args()
    args.servers = [s for s in args.servers.split(",") if s]
    args.ops = [o for o in args.ops.split(",") if o]
    for s in args.servers:
        if s not in ALL_SERVERS:
            sys.exit(f"unknown server {s}: one of {ALL_SERVERS}")
    for o in args.ops:
        if o not in ALL_OPS:
            sys.exit(f"unknown op {o}: one of {ALL_OPS}")

    print(f"fixture in {args.dir} ({fs_of(os.path.dirname(args.dir.rstrip('/')) or '/')}) …", file=sys.stderr)
    tree = make_fixture(args.dir, args.files, args.copy_mib)
    settle(tree, 0)
    warm(os.path.join(tree, BIG))
    work = tempfile.mkdtemp(prefix="work-", dir=args.dir)
    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpus": os.cpu_count(),
        "cpu_model": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                           if line.startswith("model name")), "?"),
        "kernel": platform.release(),
        "load_before": "%.2f" % os.getloadavg()[0],
        "tree": tree,
        "fs": fs_of(tree),
        "command": " ".join(["benches/webdav/bench.py"] + sys.argv[1:]),
    }
    versions = []
    servers, skipped = {}, {}
    try:
        for name in args.servers:
            try:
                if name == "nginx":
                    if not os.path.exists(NGINX_MODULE):
                        raise Skip(f"{NGINX_MODULE} missing (Debian libnginx-mod-http-dav-ext)")
                    servers[name] = start_nginx(tree, work, args.workers)
                    versions.append(version(["nginx", "-v"]).replace("nginx version: ", ""))
                elif name == "rclone":
                    servers[name] = start_rclone(tree, work, args.workers)
                    versions.append(version(["rclone", "version"]))
                else:
                    servers[name] = start_nikaia(name, args.nikaia, tree, work, args.workers)
                    if not any(v.startswith("nikaia") for v in versions):
                        versions.append(version([args.nikaia, "--version"]))
            except Skip as e:
                skipped[name] = str(e)
                print(f"SKIPPED {name}: {e}", file=sys.stderr)
        facts["versions"] = ", ".join(versions)
        names = list(servers)
        # What each op is measured on: nikaia-none differs from nikaia only
        # in what a write syncs, so it runs COPY alone.
        cells_by_op = {
            op: [s for s in names if op == "copy" or s != "nikaia-none"] for op in args.ops
        }
        # Once per server, outside the timing: a warm-up of each op, and the
        # copy's bytes compared with the source's. A server that fails one
        # (nikaia while #49 is being built) is skipped, saying what it did.
        for op in args.ops:
            for s in list(cells_by_op[op]):
                try:
                    measure(servers[s], op, tree, args.files)
                    if op == "copy" and not same_bytes(
                        os.path.join(tree, BIG), os.path.join(tree, COPY_TO)
                    ):
                        raise RuntimeError(f"{s}: the copy's bytes differ from the source's")
                except (RuntimeError, OSError, http.client.HTTPException) as e:
                    skipped[s] = f"its check of {op} failed: {e}"
                    print(f"SKIPPED {s}: {skipped[s]}", file=sys.stderr)
                    servers.pop(s).stop()
                    for cells in cells_by_op.values():
                        if s in cells:
                            cells.remove(s)
                    continue
                finally:
                    if op == "copy":
                        settle(tree, args.quiet_s)
                print(f"checked {s} {op}", file=sys.stderr)
        runs = {}
        for op in args.ops:
            cells = cells_by_op[op]
            rounds = args.copy_rounds if op == "copy" else args.rounds
            if not cells:
                continue
            for r in range(rounds):
                order = cells[r % len(cells):] + cells[: r % len(cells)]
                for s in order:
                    row = measure(servers[s], op, tree, args.files)
                    row["round"] = r
                    runs.setdefault((s, op), []).append(row)
                    if op == "copy":
                        settle(tree, args.quiet_s)
                print(f"{op} round {r + 1}/{rounds}", file=sys.stderr)
        # Same-round ratios pair rows by index: sort each list by round.
        for k in runs:
            runs[k].sort(key=lambda x: x["round"])
    finally:
        for s in servers.values():
            s.stop()
        try:
            os.unlink(os.path.join(tree, COPY_TO))
        except FileNotFoundError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    facts["load_after"] = "%.2f" % os.getloadavg()[0]
    text = report(args, runs, [s for s in servers], skipped, facts)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"facts": facts, "skipped": skipped,
                       "runs": {f"{s} {op}": r for (s, op), r in runs.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
