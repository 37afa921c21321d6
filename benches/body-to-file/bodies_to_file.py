#!/usr/bin/env python3
"""A PUT body taken into a file on disk: what it costs the machine in CPU
and wall time, nikaia (this crate's `body-to-file` program:
`Server::to_file`, `ToFile::replace`) beside nginx (`dav_methods PUT`),
one worker each, in one run; with `--nikaia-cli` and `--dufs`, also the
`nikaia serve` command with a `[[write]]` rule and dufs.

Three servers per case (five or six with the options below), started side
by side and asked in rotating order inside each round:

  nikaia(none)  durability none: no sync before the name appears — what
                nginx does (it renames its temporary file and answers);
  nikaia(data)  durability data, nikaia's default: fdatasync before the
                name appears, so its time and CPU include the disk write;
  nginx         dav_methods PUT, its client_body_temp_path on the same
                file system as the target directory (its last step is a
                rename), client_body_buffer_size left at its default;
  serve(none)   with --nikaia-cli NIKAIA: `nikaia serve ROOT --runtime FILE`,
  serve(data)   one worker, no access log, a `[[write]]` rule for every
                name (anyone, create, replace, plain-http) with that
                durability: the same writer as the program's, reached
                through the CLI's site rules;
  dufs          with --dufs DUFS: `dufs ROOT --allow-upload --allow-delete`
                (delete, because without it dufs refuses a PUT over a file
                that is not empty), no log; it truncates the file and
                writes it in place, syncing nothing; tokio's threads (one
                per core), it has no setting for fewer. HTTP/1.1 only.

Two builds in one run (a change measured before and after):
--versus-server BIN adds before:nikaia(none) and before:nikaia(data), BIN
being the body-to-file program built from the code before; with
--nikaia-cli, --versus-nikaia-cli NIKAIA adds before:serve(none) and
before:serve(data) likewise. They are asked in the same rotation, and each
round's after/before pairs are divided like the others.

Cases: plain HTTP/1.1 (the main one), plain HTTP/2 (h2c by prior
knowledge), TLS HTTP/1.1, TLS HTTP/2 (ALPN); TLS 1.3 with
TLS_AES_128_GCM_SHA256 for all (the client asks only for it), a
self-signed P-256 certificate. The client is curl for all, `-T FILE`, the
file read from the page cache (read once before the first round). Every
PUT replaces the same name, `x`, in one directory.

Each PUT: wall time (curl's run), MiB/s, machine CPU ms per GiB (from
/proc/stat: user+nice+system+irq+softirq of all CPUs, before and after,
the client included: on loopback the kernel's TCP work moves between the
client and the server), the server's own CPU ms per GiB (/proc/PID/stat
utime+stime: nikaia's process, all its threads, `nikaia serve`'s and
dufs's likewise; nginx's worker). Before each PUT the directory's file
system is synced outside the measurement, so no PUT pays for the writeback
of the one before it; a PUT with durability none, and nginx's, leaves its
data in the page cache, though ext4 writes a file back when it is renamed
over another (or truncated, rewritten and closed: dufs), `auto_da_alloc`,
and every PUT after a run's first replaces `x`.

    benches/body-to-file/bodies_to_file.py --server target/body-to-file/release/body-to-file \\
        --data target/body-to-file-data [--gib 1] [--rounds 5] \\
        [--nikaia-cli target/release/nikaia] [--dufs /tmp/dufs/bin/dufs] [--json FILE] \\
        [--quiet 50 --quiet-max 120] \\
        [--versus-server BEFORE/body-to-file [--versus-nikaia-cli BEFORE/nikaia]]
"""

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVERS = ("nikaia(none)", "nikaia(data)", "nginx")
SERVE = ("serve(none)", "serve(data)")  # with --nikaia-cli
DUFS = ("dufs",)  # with --dufs
# Per round, the first over the second of the same round.
PAIRS = (("nikaia(none)", "nginx"), ("nikaia(data)", "nginx"), ("serve(none)", "nginx"),
         ("serve(data)", "nginx"), ("dufs", "nginx"), ("serve(none)", "nikaia(none)"),
         *((n, "before:" + n) for n in ("nikaia(none)", "nikaia(data)", "serve(none)", "serve(data)")))
CASES = ((False, False), (False, True), (True, False), (True, True))  # (tls, h2)

NGINX = """
{user}
worker_processes 1;
daemon off;
master_process on;
pid {conf}/nginx.pid;
error_log {conf}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp};
    client_max_body_size 0;
    client_body_timeout 60s;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} {listen};
        {tls}
        location /up/ {{
            alias {files}/;
            dav_methods PUT;
            create_full_put_path off;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""

TLS_NGINX = """ssl_certificate {conf}/cert.pem;
        ssl_certificate_key {conf}/key.pem;
        ssl_protocols TLSv1.3;"""

# `nikaia serve`'s runtime file: one worker, no access log, every name
# writable by anyone (plain HTTP too), created or replaced, no size limit
# that 1 GiB meets.
SERVE_RUNTIME = """listen = [{listen}]
workers = 1
access-log = "off"
{tls}
[[write]]
match = "**"
anyone = true
create = true
replace = true
max-size = "64GiB"
durability = "{durability}"
plain-http = true
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc):
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server on {port} exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def machine_cpu():
    """user+nice+system+irq+softirq jiffies of all CPUs."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = map(int, f.readline().split()[1:8])
    return user + nice + system + irq + softirq


def machine_idle():
    """idle+iowait jiffies of all CPUs, and all jiffies but guest time: for
    the raw results' check of what the busy jiffies missed."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:9]))
    return v[3] + v[4], sum(v)


def proc_cpu(pid):
    """utime+stime jiffies of a process, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Server:
    """One server of one case: nikaia with a durability, or nginx; a name
    "before:X" is X run from the --versus-server or --versus-nikaia-cli build."""

    def __init__(self, name, args, conf, tls, h2):
        self.name, self.args, self.tls, self.h2 = name, args, tls, h2
        self.before = name.startswith("before:")
        self.kind = name[len("before:"):] if self.before else name
        self.conf = os.path.join(conf, f"{name.replace(':', '-').replace('(', '-').rstrip(')')}"
                                       f"-{'tls' if tls else 'plain'}"
                                       f"-{'h2' if h2 else 'h1'}")
        self.port = free_port()
        self.proc = None

    def start(self):
        os.makedirs(self.conf, exist_ok=True)
        cert, key = (os.path.join(self.args.conf, f) for f in ("cert.pem", "key.pem"))
        if self.kind == "nginx":
            for f in (cert, key):
                shutil.copy(f, self.conf)
            # nginx 1.22: `listen … http2` on a plain listener speaks only h2c.
            listen = " ".join(w for w, on in (("ssl", self.tls), ("http2", self.h2)) if on)
            # Run as root (a container), the worker must write under root-owned directories.
            user = "user root root;" if os.geteuid() == 0 else ""
            path = os.path.join(self.conf, "nginx.conf")
            with open(path, "w") as f:
                f.write(NGINX.format(user=user, conf=self.conf, tmp=self.args.tmp, files=self.args.files,
                                     port=self.port, listen=listen,
                                     tls=TLS_NGINX.format(conf=self.conf) if self.tls else ""))
            cmd = [shutil.which("nginx") or "/usr/sbin/nginx", "-c", path, "-p", self.conf]
        elif self.kind.startswith("serve("):
            durability = self.kind[len("serve("):-1]
            nikaia = self.args.versus_nikaia_cli if self.before else self.args.nikaia_cli
            address = f'"127.0.0.1:{self.port}"'
            listen = f"{{ address = {address}, tls = true }}" if self.tls else address
            tls = f'tls-cert = "{cert}"\ntls-key = "{key}"' if self.tls else ""
            path = os.path.join(self.conf, "runtime.toml")
            with open(path, "w") as f:
                f.write(SERVE_RUNTIME.format(listen=listen, tls=tls, durability=durability))
            subprocess.run([nikaia, "check", path], check=True, capture_output=True)
            cmd = [nikaia, "serve", self.args.root, "--runtime", path]
        elif self.kind == "dufs":
            cmd = [self.args.dufs, self.args.root, "-b", "127.0.0.1", "-p", str(self.port),
                   "--allow-upload", "--allow-delete", "--log-format", ""]
            if self.tls:
                cmd += ["--tls-cert", cert, "--tls-key", key]
        else:
            durability = self.kind[len("nikaia("):-1]
            cmd = [self.args.versus_server if self.before else self.args.server, f"127.0.0.1:{self.port}", self.args.files, durability]
            if self.tls:
                cmd += [cert, key]
        self.log = open(os.path.join(self.conf, "stderr"), "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log)
        wait_port(self.port, self.proc)
        self.pid = self.worker_pid()

    def worker_pid(self):
        if self.kind != "nginx":
            return self.proc.pid
        for _ in range(100):
            out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                 text=True).stdout.split()
            if out:
                return int(out[0])
            time.sleep(0.05)
        raise SystemExit("no nginx worker")

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.log.close()

    def url(self):
        # nginx and the program take /up/NAME into files/; `nikaia serve` and
        # dufs serve root/, whose files/ it is.
        path = "up" if self.kind in SERVERS else "files"
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/{path}/x"


def put(server, body, size):
    """One PUT of `body` by curl: (seconds, server jiffies, machine jiffies,
    what the raw results keep besides: the status, curl's own CPU, the
    machine's CPU ms per second just before, how long the PUT waited for it
    to be low)."""
    cmd = ["curl", "-sS", "-T", body, "-o", "/dev/null",
           "-w", "%{http_code} %{http_version} %{size_upload}"]
    if server.tls:
        cmd += ["-k", "--tlsv1.3", "--tls13-ciphers", "TLS_AES_128_GCM_SHA256",
                "--http2" if server.h2 else "--http1.1"]
    else:
        cmd += ["--http2-prior-knowledge" if server.h2 else "--http1.1"]
    cmd.append(server.url())
    # Whatever an earlier PUT left dirty goes to the disk now, unmeasured;
    # then the page cache is dropped, so every PUT writes into free memory
    # (on this VM a write into memory freed seconds before costs several
    # times more CPU than one into memory just dropped: docs/performance.md).
    subprocess.run(["sync", "-f", server.args.files], check=True)
    if server.args.drop_caches:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    # On a shared machine, --quiet waits (unmeasured, --quiet-max at most)
    # until nothing else keeps the CPUs busy: /proc/stat counts every process.
    w0 = time.monotonic()
    while True:
        b0 = machine_cpu()
        time.sleep(0.2 if not server.args.quiet else 0.5)
        background = (machine_cpu() - b0) * 1000 / CLK_TCK / (0.2 if not server.args.quiet else 0.5)
        if (not server.args.quiet or background <= server.args.quiet
                or time.monotonic() - w0 > server.args.quiet_max):
            break
    waited = time.monotonic() - w0
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    (i0, a0), m0, s0 = machine_idle(), machine_cpu(), proc_cpu(server.pid)
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    m1, s1, (i1, a1) = machine_cpu(), proc_cpu(server.pid), machine_idle()
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)  # seconds
    got = out.stdout.split()
    want_version = "2" if server.h2 else "1.1"
    if (out.returncode != 0 or len(got) != 3 or got[0] not in ("201", "204")
            or got[1] != want_version or int(got[2]) != size):
        raise SystemExit(f"{server.name} {' '.join(cmd)}: the PUT failed: {out.stdout} {out.stderr}")
    if os.stat(os.path.join(server.args.files, "x")).st_size != size:
        raise SystemExit(f"{server.name}: x is not {size} bytes after its PUT")
    # The busy jiffies are sampled at ticks; where a CPU goes idle and back
    # very often they can fall short of the wall time, which the raw results
    # keep as the CPUs' wall time less all jiffies, and the busy time
    # estimated as the CPUs' wall time less idle and iowait.
    cpus_ms = os.cpu_count() * wall * 1000
    extra = {"status": int(got[0]), "client_cpu_s": client, "background_cpu_ms_per_s": background,
             "waited_s": waited, "unaccounted_ms": cpus_ms - (a1 - a0) * 1000 / CLK_TCK,
             "not_idle_ms": cpus_ms - (i1 - i0) * 1000 / CLK_TCK}
    return wall, s1 - s0, m1 - m0, extra


def cell(xs, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def case(args, tls, h2, body, size):
    gib = size / 2**30
    label = f"{'TLS' if tls else 'plain'} {'HTTP/2' if h2 else 'HTTP/1.1'}"
    # dufs over HTTP/2 (hyper's) took 64 MiB at 76 MiB/s in a trial, a fifth of
    # the others: only its HTTP/1.1 is measured.
    servers = [Server(name, args, args.conf, tls, h2) for name in args.servers
               if not (h2 and name == "dufs")]
    runs = {s.name: [] for s in servers}
    pairs = [p for p in PAIRS if p[0] in runs and p[1] in runs]
    ratios = {p: {"rate": [], "machine": []} for p in pairs}
    try:
        for s in servers:
            s.start()
        for r in range(args.rounds):
            k = r % len(servers)
            got = {}
            for s in servers[k:] + servers[:k]:
                wall, server, machine, extra = put(s, body, size)
                got[s.name] = (wall, size / 2**20 / wall, machine * 1000 / CLK_TCK / gib,
                               server * 1000 / CLK_TCK / gib)
                runs[s.name].append(got[s.name])
                if args.json:
                    args.raw.append({"case": label, "round": r, "server": s.name, "wall_s": wall,
                                     "mib_s": got[s.name][1], "machine_cpu_ms_per_gib": got[s.name][2],
                                     "server_cpu_ms_per_gib": got[s.name][3],
                                     "client_cpu_ms_per_gib": extra.pop("client_cpu_s") * 1000 / gib,
                                     "not_idle_ms_per_gib": extra.pop("not_idle_ms") / gib,
                                     "unaccounted_ms_per_gib": extra.pop("unaccounted_ms") / gib,
                                     **extra})
            for a, b in pairs:
                ratios[(a, b)]["rate"].append(got[a][1] / got[b][1])
                ratios[(a, b)]["machine"].append(got[a][2] / got[b][2])
    finally:
        for s in servers:
            s.stop()
    rows = []
    for name in runs:
        xs = runs[name]
        rows.append(f"| {label} | {name} | {cell([x[0] for x in xs], '{:.2f}')} | "
                    f"{cell([x[1] for x in xs])} | {cell([x[2] for x in xs])} | "
                    f"{cell([x[3] for x in xs])} |")
    ratio_rows = [f"| {label} | {a}/{b} | {cell(ratios[(a, b)]['machine'], '{:.2f}')} | "
                  f"{cell(ratios[(a, b)]['rate'], '{:.2f}')} |" for a, b in pairs]
    return rows, ratio_rows


def idle_load(seconds=2.0):
    """The machine's CPU ms per second with nothing of this run going on."""
    m0 = machine_cpu()
    time.sleep(seconds)
    return (machine_cpu() - m0) * 1000 / CLK_TCK / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="the built body-to-file program")
    ap.add_argument("--data", required=True,
                    help="a directory on the file system to write to (made if missing)")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--drop-caches", action=argparse.BooleanOptionalAction, default=os.geteuid() == 0,
                    help="drop the page cache before each PUT, unmeasured (root only; default when root)")
    ap.add_argument("--source-dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the source body is kept (default /dev/shm: dropping the cache keeps it)")
    ap.add_argument("--cases", default="plain-h1,plain-h2,tls-h1,tls-h2",
                    help="which of plain-h1, plain-h2, tls-h1, tls-h2")
    ap.add_argument("--nikaia-cli", help="the built `nikaia` command: adds serve(none) and serve(data)")
    ap.add_argument("--dufs", help="a dufs binary: adds dufs")
    ap.add_argument("--versus-server", help="the body-to-file program built before a change: adds "
                                            "before:nikaia(none) and before:nikaia(data)")
    ap.add_argument("--versus-nikaia-cli", help="with --nikaia-cli, `nikaia` built before a change: adds "
                                                "before:serve(none) and before:serve(data)")
    ap.add_argument("--json", help="also write every PUT's numbers to this file")
    ap.add_argument("--quiet", type=float, default=0,
                    help="before each PUT, wait until the machine's CPU is below this many ms per second "
                         "(over 0.5 s; 0, the default, waits 0.2 s and no more)")
    ap.add_argument("--quiet-max", type=float, default=300, help="the longest --quiet waits, seconds")
    args = ap.parse_args()
    args.server = os.path.abspath(args.server)
    args.servers = list(SERVERS)
    if args.nikaia_cli:
        args.nikaia_cli = os.path.abspath(args.nikaia_cli)
        args.servers += SERVE
    if args.versus_server:
        args.versus_server = os.path.abspath(args.versus_server)
        args.servers += ["before:nikaia(none)", "before:nikaia(data)"]
    if args.versus_nikaia_cli:
        if not args.nikaia_cli:
            raise SystemExit("--versus-nikaia-cli needs --nikaia-cli")
        args.versus_nikaia_cli = os.path.abspath(args.versus_nikaia_cli)
        args.servers += ["before:serve(none)", "before:serve(data)"]
    if args.dufs:
        args.dufs = os.path.abspath(args.dufs)
        args.servers += DUFS
    args.raw = []
    data = os.path.abspath(args.data)
    # root/ is what `nikaia serve` and dufs serve; every server writes root/files/x.
    args.root, args.tmp, args.conf = (os.path.join(data, d) for d in ("root", "nginx-tmp", "conf"))
    args.files = os.path.join(args.root, "files")
    for d in (args.files, args.tmp, args.conf):
        os.makedirs(d, exist_ok=True)
    if os.stat(args.files).st_dev != os.stat(args.tmp).st_dev:
        raise SystemExit("nginx's temporary directory is not on the target's file system")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", os.path.join(args.conf, "key.pem"), "-out",
                    os.path.join(args.conf, "cert.pem"), "-days", "7", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    size = int(args.gib * 2**30) >> 20 << 20
    # The source lives on tmpfs: dropping the page cache leaves it in memory.
    body = os.path.join(args.source_dir or data, "body")
    if not os.path.exists(body) or os.path.getsize(body) != size:
        with open(body, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(size >> 20):
                f.write(block)
    with open(body, "rb") as f:  # into the page cache, once
        while f.read(1 << 24):
            pass
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", args.files],
                        capture_output=True, text=True).stdout.strip()
    nginx = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    curl = subprocess.run(["curl", "-V"], capture_output=True, text=True).stdout.split("\n")[0].split()[:2]
    others = ""
    if args.nikaia_cli:
        others += "; " + subprocess.run([args.nikaia_cli, "--version"], capture_output=True,
                                        text=True).stdout.strip()
    for name, path in (("body-to-file", args.server), ("before: body-to-file", args.versus_server),
                       ("nikaia", args.nikaia_cli), ("before: nikaia", args.versus_nikaia_cli)):
        if path:
            sha = subprocess.run(["sha256sum", path], capture_output=True, text=True).stdout.split()[0][:16]
            others += f"; {name} {path} (sha256 {sha}…)"
    if args.dufs:
        others += "; " + subprocess.run([args.dufs, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# body to file, {time.strftime('%Y-%m-%d %H:%M')}, {size / 2**30:g} GiB body, {args.rounds} rounds, "
          f"{os.cpu_count()} cores, {fs}; {nginx}; {' '.join(curl)}{others}; "
          f"source {body}; page cache dropped before each PUT: {'yes' if args.drop_caches else 'no'}; "
          f"{f'each PUT waits for the machine below {args.quiet:g} CPU ms/s; ' if args.quiet else ''}"
          f"idle machine before: {idle_load():.0f} CPU ms/s")
    print()
    print("| case | server | wall s | MiB/s | machine CPU ms/GiB | server CPU ms/GiB |")
    print("|---|---|---|---|---|---|", flush=True)
    all_ratios = []
    wanted = args.cases.split(",")
    for tls, h2 in CASES:
        if f"{'tls' if tls else 'plain'}-{'h2' if h2 else 'h1'}" not in wanted:
            continue
        rows, ratio_rows = case(args, tls, h2, body, size)
        for row in rows:
            print(row, flush=True)
        if args.json:  # after every case, so that a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump({"gib": size / 2**30, "rounds": args.rounds, "servers": args.servers,
                           "puts": args.raw}, f, indent=1)
        all_ratios += ratio_rows
    print()
    print("Per round, the first over the second in the same round:")
    print()
    print("| case | pair | machine CPU per GiB | MiB/s |")
    print("|---|---|---|---|")
    for row in all_ratios:
        print(row)
    print()
    print(f"idle machine after: {idle_load():.0f} CPU ms/s")


if __name__ == "__main__":
    main()
