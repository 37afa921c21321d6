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
  locks             (#50; not in the default --ops) what WebDAV locks cost:
                    a bare PUT of 64 KiB beside a LOCK -> PUT If: -> UNLOCK
                    cycle of it, at 0, 1 000 and 5 000 locks held on other
                    names; servers' locks turned on (nikaia [webdav-locks],
                    nginx dav_ext_lock_zone). See locks.py.

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
        [--ops propfind-allprop,propfind-named,copy|locks] [--dir /var/tmp/nikaia-dav-bench] \
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
import statistics
import subprocess
import sys
import tempfile
import time

import locks as lockbench
from servers import NGINX_MODULE, Skip, request, start_nginx, start_nikaia, start_rclone

ALL_SERVERS = ["nginx", "rclone", "nikaia", "nikaia-none"]
ALL_OPS = ["propfind-allprop", "propfind-named", "copy", "locks"]
DEFAULT_OPS = ["propfind-allprop", "propfind-named", "copy"]
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

# Where each server keeps its locks (the `locks` op).
LOCKS_KEPT = {
    "nginx": "in a shared-memory zone (`dav_ext_lock_zone zone=lk:64m timeout=1h`: every "
    "lock lives 1 h whatever its Timeout asks; tokens `urn:` and 8 hex digits; OPTIONS "
    "says `DAV: 2` without `1`, so litmus and davfs2 take it for class 1); a PUT writes a "
    "temporary file and renames it, no fsync",
    "rclone": "in memory (x/net/webdav's memLS): gone with the process; a PUT writes in "
    "place, no fsync",
    "nikaia": "in one file, `[webdav-locks] dir`/locks, rewritten whole on each change "
    "(fdatasync, rename, directory fsync): kept across restarts and shared by both "
    "processes of an upgrade; a PUT is fdatasync'd before it is named "
    '(`durability = "data"`)',
    "nikaia-none": "the same locks file (synced on each change as in `nikaia`); a PUT syncs "
    'nothing (`durability = "none"`)',
}


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
    # An op that needs neither (files or copy_mib 0) takes any fixture.
    for have in os.listdir(base) if os.path.isdir(base) else []:
        m = re.fullmatch(r"fixture-(\d+)-(\d+)", have)
        if m and files in (0, int(m[1])) and copy_mib in (0, int(m[2])):
            return tree
    stamp = os.path.join(base, f"fixture-{files}-{copy_mib}")
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


# One request -------------------------------------------------------------


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
    what = [w for w, on in (
        ("PROPFIND Depth 1", any(o.startswith("propfind") for o in args.ops)),
        ("COPY", "copy" in args.ops),
        ("what locks cost", "locks" in args.ops),
    ) if on]
    title = " and ".join([", ".join(what[:-1]), what[-1]] if len(what) > 1 else what)
    p(f"# WebDAV: {title} beside nginx and rclone ({facts['date']})\n")
    p(f"Machine: {facts['cpus']} CPUs ({facts['cpu_model']}), Linux {facts['kernel']}; "
      f"load average {facts['load_before']} before, {facts['load_after']} after.")
    p(f"Tree: `{facts['tree']}` on {facts['fs']} (the same for every server).")
    p(f"Versions: {facts['versions']}.")
    p(f"Command: `{facts['command']}`\n")
    rounds = []
    if any(o.startswith("propfind") for o in args.ops):
        rounds.append(f"{args.rounds} of each PROPFIND")
    if "copy" in args.ops:
        rounds.append(f"{args.copy_rounds} of COPY")
    if "locks" in args.ops:
        rounds.append(f"{args.lock_rounds} at each level of locks held (below)")
    p(f"Rounds: {', '.join(rounds)}; workers {args.workers} each; one Python client on "
      "loopback (PROPFIND and COPY: one request per fresh connection); medians (min–max). "
      "Machine CPU is every CPU's non-idle time (/proc/stat), the client's included; server "
      "CPU is the server's processes' utime + stime.\n")
    for name, why in skipped.items():
        p(f"**Skipped: {name}** — {why}\n")
    if "copy" in args.ops:
        p("Durability of each server's COPY:\n")
        for s in servers:
            p(f"- {s}: {DURABILITY[s]}")
        p("")
    if "locks" in args.ops:
        p("Where each server keeps its locks, and what its PUT syncs:\n")
        for s in servers:
            p(f"- {s}: {LOCKS_KEPT[s]}")
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
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS), help=f"of {ALL_OPS}")
    ap.add_argument("--rounds", type=int, default=7, help="rounds of each PROPFIND")
    ap.add_argument("--copy-rounds", type=int, default=5, help="rounds of COPY")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--copy-mib", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--lock-levels", default="0,1000,5000",
                    help="locks: how many locks held at each level (ascending)")
    ap.add_argument("--lock-rounds", type=int, default=5, help="locks: rounds at each level")
    ap.add_argument("--lock-n", type=int, default=10, help="locks: PUTs and cycles per batch")
    ap.add_argument("--lock-kib", type=int, default=64, help="locks: the PUT's size")
    ap.add_argument("--lock-conn", choices=["keep", "fresh"], default="keep",
                    help="locks: one keep-alive connection per batch, or one per request")
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
    args.lock_levels = [int(x) for x in args.lock_levels.split(",") if x]
    if args.lock_levels != sorted(args.lock_levels) or not args.lock_levels:
        sys.exit("--lock-levels: ascending counts, e.g. 0,1000,5000")
    with_locks = "locks" in args.ops
    # A bound well past the top level (the cycle takes one more).
    max_locks = max(args.lock_levels) * 2 + 100 if with_locks else 0

    print(f"fixture in {args.dir} ({fs_of(os.path.dirname(args.dir.rstrip('/')) or '/')}) …", file=sys.stderr)
    tree = make_fixture(
        args.dir,
        args.files if any(o.startswith("propfind") for o in args.ops) else 0,
        args.copy_mib if "copy" in args.ops else 0,
    )
    settle(tree, 0)
    if "copy" in args.ops:
        warm(os.path.join(tree, BIG))
    if with_locks:
        lockbench.make_files(tree, max(args.lock_levels))
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
                    servers[name] = start_nginx(tree, work, args.workers, with_locks)
                    versions.append(version(["nginx", "-v"]).replace("nginx version: ", ""))
                elif name == "rclone":
                    servers[name] = start_rclone(tree, work, args.workers)
                    versions.append(version(["rclone", "version"]))
                else:
                    servers[name] = start_nikaia(
                        name, args.nikaia, tree, work, args.workers, max_locks
                    )
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
            op: [s for s in names if op in ("copy", "locks") or s != "nikaia-none"]
            for op in args.ops
        }
        # Once per server, outside the timing: a warm-up of each op, and the
        # copy's bytes compared with the source's. A server that fails one
        # (nikaia while #49 is being built) is skipped, saying what it did.
        for op in args.ops:
            for s in list(cells_by_op[op]):
                try:
                    if op == "locks":
                        lockbench.check(servers[s], os.urandom(args.lock_kib * 1024),
                                        args.lock_conn == "fresh")
                        print(f"checked {s} {op}", file=sys.stderr)
                        continue
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
        runs, lock_runs, lock_fills, locks_files = {}, {}, {}, {}
        for op in args.ops:
            cells = cells_by_op[op]
            if op == "locks":
                if cells:
                    lock_runs, lock_fills = lockbench.run(
                        servers, cells, args, tree,
                        lambda m: print(m, file=sys.stderr), (machine_busy, tree_cpu),
                    )
                    for s in cells:
                        f = os.path.join(work, f"{s}-locks", "locks")
                        if os.path.exists(f):
                            locks_files[s] = os.stat(f).st_size
                continue
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
    if lock_runs:
        lock_names = [s for s in servers if any(k[0] == s for k in lock_runs)]
        text += "\n" + lockbench.section(
            args, lock_runs, lock_fills, lock_names, locks_files, spread, ms, ratio
        )
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"facts": facts, "skipped": skipped,
                       "runs": {f"{s} {op}": r for (s, op), r in runs.items()},
                       "locks": {f"{s} {lv} {kind}": r for (s, lv, kind), r in lock_runs.items()},
                       "lock_fills": {f"{s} {lv}": r for (s, lv), r in lock_fills.items()},
                       "locks_file_bytes": locks_files}, f, indent=1)


if __name__ == "__main__":
    main()
