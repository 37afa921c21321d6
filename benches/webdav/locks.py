"""The `locks` op of bench.py (#50): what WebDAV class 2 locks cost a
write, measured side by side on every server that keeps locks.

At each level of locks held (default 0, 1 000, 5 000: exclusive depth-0
locks on the empty files /lk/f-NNNNN, taken by LOCKs before the level is
measured, Timeout: Second-3600), each round runs, for every server in an
order rotated by one each round:

  put    N PUTs of the same 64 KiB to /lk/w-SERVER.bin (a file no lock
         touches): a plain write's cost with that many locks held on other
         names of its collection
  cycle  N Finder/Windows-like write cycles of the same file: LOCK
         (exclusive, Depth: 0, Timeout: Second-600, Finder's owner) -> PUT
         with `If: (<token>)` -> UNLOCK; the LOCK and the UNLOCK are timed
         on their own too, so the cycle gives the LOCK's and the UNLOCK's
         latency at that level

Requests go on one keep-alive connection per batch (a mounted drive keeps
its connection), or one fresh connection each with --lock-conn fresh. Per
request: wall from the request's first byte to the answer's last; per
batch: machine CPU (/proc/stat, every CPU's non-idle time) and server CPU
(the server's processes) divided by N. Before the levels, once per server
and outside the timing: a LOCK, a PUT without the token (must be 423), the
PUT with it (2xx), the UNLOCK (204), a PUT again (2xx).
"""

import http.client
import os
import re
import statistics
import time

LK = "lk"
HELD_TIMEOUT = "Second-3600"
CYCLE_TIMEOUT = "Second-600"
# Finder's lockinfo (spec/site.md "The clients' habits").
LOCKINFO = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>'
    b"<D:locktype><D:write/></D:locktype>"
    b"<D:owner><D:href>http://www.apple.com/webdav_fs/</D:href></D:owner></D:lockinfo>\n"
)
TOKEN = re.compile(r"<([^>]+)>")


def held_name(i):
    return f"/{LK}/f-{i:05}"


def make_files(tree, count):
    """The empty files the held locks go on (kept with the fixture)."""
    d = os.path.join(tree, LK)
    os.makedirs(d, exist_ok=True)
    have = set(os.listdir(d))
    for i in range(count):
        n = f"f-{i:05}"
        if n not in have:
            open(os.path.join(d, n), "wb").close()


class Client:
    """Requests to one server: one keep-alive connection, or a fresh one
    per request."""

    def __init__(self, port, fresh):
        self.port, self.fresh, self.conn = port, fresh, None

    def __call__(self, method, path, headers=None, body=b""):
        headers = dict(headers or {})
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                wall = time.perf_counter() - t0
                h = dict((k.lower(), v) for k, v in r.getheaders())
                if self.fresh or h.get("connection", "").lower() == "close":
                    self.close()
                return r.status, h, data, wall
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept connection the server closed while idle: once more.
                self.close()
                if attempt:
                    raise
        raise AssertionError

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def lock(c, path, timeout):
    st, h, data, wall = c(
        "LOCK",
        path,
        {"Depth": "0", "Timeout": timeout, "Content-Type": 'application/xml; charset="utf-8"'},
        LOCKINFO,
    )
    if st not in (200, 201):
        raise RuntimeError(f"LOCK {path} answered {st}: {data[:300]!r}")
    m = TOKEN.search(h.get("lock-token", ""))
    if not m:
        raise RuntimeError(f"LOCK {path} answered {st} without a Lock-Token")
    return m.group(1), wall


def unlock(c, path, token):
    st, _, data, wall = c("UNLOCK", path, {"Lock-Token": f"<{token}>"})
    if st != 204:
        raise RuntimeError(f"UNLOCK {path} answered {st}: {data[:300]!r}")
    return wall


def put(c, path, body, token=None):
    headers = {"Content-Type": "application/octet-stream"}
    if token:
        headers["If"] = f"(<{token}>)"
    st, _, data, wall = c("PUT", path, headers, body)
    if st not in (200, 201, 204):
        raise RuntimeError(f"PUT {path} answered {st}: {data[:300]!r}")
    return wall


def target(server):
    return f"/{LK}/w-{server}.bin"


def check(server, body, fresh):
    """Outside the timing: the server keeps locks and a write honours them."""
    c = Client(server.port, fresh)
    try:
        path = target(server.name)
        put(c, path, body)
        token, _ = lock(c, path, CYCLE_TIMEOUT)
        st, _, data, _ = c("PUT", path, {"Content-Type": "application/octet-stream"}, body)
        if st != 423:
            unlock(c, path, token)
            raise RuntimeError(f"a PUT without the lock's token answered {st}, not 423: locks not enforced")
        put(c, path, body, token)
        unlock(c, path, token)
        put(c, path, body)
    finally:
        c.close()


def fill(server, held, upto, fresh):
    """LOCKs /lk/f-NNNNN until `held` has `upto` tokens; each LOCK's wall."""
    c = Client(server.port, fresh)
    walls = []
    try:
        while len(held) < upto:
            token, wall = lock(c, held_name(len(held)), HELD_TIMEOUT)
            held.append(token)
            walls.append(wall)
    finally:
        c.close()
    return walls


def batch(server, kind, n, body, fresh, cpu):
    """N PUTs or N cycles: the figures of the batch. `cpu` is bench.py's
    (machine_busy, tree_cpu)."""
    hz = os.sysconf("SC_CLK_TCK")
    machine_busy, tree_cpu = cpu

    path = target(server.name)
    c = Client(server.port, fresh)
    try:
        if not fresh:
            c("OPTIONS", "/")  # the connection opened outside the timing
        walls = {"put": [], "lock": [], "unlock": [], "cycle": []}
        srv0, busy0 = tree_cpu(server.proc.pid), machine_busy()
        t0 = time.perf_counter()
        for _ in range(n):
            if kind == "put":
                walls["put"].append(put(c, path, body))
            else:
                t1 = time.perf_counter()
                token, w = lock(c, path, CYCLE_TIMEOUT)
                walls["lock"].append(w)
                walls["put"].append(put(c, path, body, token))
                walls["unlock"].append(unlock(c, path, token))
                walls["cycle"].append(time.perf_counter() - t1)
        total = time.perf_counter() - t0
        busy1, srv1 = machine_busy(), tree_cpu(server.proc.pid)
    finally:
        c.close()
    row = {
        "n": n,
        "wall_total": total,
        "machine_cpu_per": (busy1 - busy0) / hz / n,
        "server_cpu_per": (srv1 - srv0) / hz / n,
    }
    for k, xs in walls.items():
        if xs:
            row[k] = statistics.median(xs)
            row[k + "_max"] = max(xs)
    return row


def run(servers, names, args, tree, log, cpu):
    """Every level, every round: {(server, level, kind): [row per round]},
    and the fills' figures {(server, level): {...}}."""
    hz = os.sysconf("SC_CLK_TCK")
    body = os.urandom(args.lock_kib * 1024)
    fresh = args.lock_conn == "fresh"
    held = {s: [] for s in names}
    runs, fills = {}, {}
    for level in args.lock_levels:
        for s in names:
            before = len(held[s])
            srv0 = cpu[1](servers[s].proc.pid)
            t0 = time.perf_counter()
            walls = fill(servers[s], held[s], level, fresh)
            if walls:
                fills[(s, level)] = {
                    "from": before,
                    "to": level,
                    "seconds": time.perf_counter() - t0,
                    "server_cpu_per_lock": (cpu[1](servers[s].proc.pid) - srv0) / hz / len(walls),
                    "walls_us": [round(w * 1e6) for w in walls],
                    "lock_median": statistics.median(walls),
                    "lock_median_last_100": statistics.median(walls[-100:]),
                }
                log(f"locks: {s} holds {level} ({fills[(s, level)]['seconds']:.1f} s)")
        for r in range(args.lock_rounds):
            order = names[r % len(names):] + names[: r % len(names)]
            for s in order:
                for kind in ("put", "cycle") if r % 2 == 0 else ("cycle", "put"):
                    row = batch(servers[s], kind, args.lock_n, body, fresh, cpu)
                    row["round"] = r
                    runs.setdefault((s, level, kind), []).append(row)
            log(f"locks: {level} held, round {r + 1}/{args.lock_rounds}")
    return runs, fills


# The report ---------------------------------------------------------------


def section(args, runs, fills, names, locks_files, spread, ms_, ratio):
    def ms(x):
        return ms_(x) if x >= 0.001 else f"{x * 1000:.2f}"

    out = []
    p = out.append
    conn = "one fresh connection per request" if args.lock_conn == "fresh" else (
        "one keep-alive connection per batch")
    levels = args.lock_levels
    p("## locks\n")
    p(f"Levels of locks held: {', '.join(map(str, levels))} (exclusive, depth 0, on other "
      f"names of the same collection, /{LK}/f-NNNNN, taken by LOCKs before each level). "
      f"At each level, {args.lock_rounds} rounds; each round every server runs a batch of "
      f"{args.lock_n} PUTs of {args.lock_kib} KiB to /{LK}/w-SERVER.bin and a batch of "
      f"{args.lock_n} write cycles of that file (LOCK exclusive depth 0 → PUT with "
      f"`If: (<token>)` → UNLOCK), {conn}. Per request: the batch's median wall, then "
      "median (min–max) over the rounds. CPU: the batch's jiffies over N.\n")
    l0 = levels[0]

    def col(s, level, kind, key, fmt=None):
        fmt = fmt or ms
        r = runs.get((s, level, kind))
        return spread([x[key] for x in r], fmt) if r else "–"

    def paired(s, a, b, key_a, key_b=None):
        """Ratio of two cells, round by round."""
        ra, rb = runs.get(a), runs.get(b)
        if not ra or not rb:
            return "–"
        xs = [x[key_a] / y[key_b or key_a] for x, y in zip(ra, rb) if y[key_b or key_a] > 0]
        return spread(xs, ratio) if xs else "–"

    p(f"### A write cycle beside a bare PUT ({l0} locks held)\n")
    p("| server | PUT ms | cycle ms | cycle / PUT | LOCK ms | PUT with token ms | UNLOCK ms | "
      "machine CPU ms per PUT | per cycle | server CPU ms per PUT | per cycle |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in names:
        p(f"| {s} | {col(s, l0, 'put', 'put')} | {col(s, l0, 'cycle', 'cycle')} | "
          f"{paired(s, (s, l0, 'cycle'), (s, l0, 'put'), 'cycle', 'put')} | "
          f"{col(s, l0, 'cycle', 'lock')} | {col(s, l0, 'cycle', 'put')} | "
          f"{col(s, l0, 'cycle', 'unlock')} | "
          f"{col(s, l0, 'put', 'machine_cpu_per')} | {col(s, l0, 'cycle', 'machine_cpu_per')} | "
          f"{col(s, l0, 'put', 'server_cpu_per')} | {col(s, l0, 'cycle', 'server_cpu_per')} |")
    p("")
    top = levels[-1]
    p("### A plain PUT with locks held on other names\n")
    head = " | ".join(f"PUT ms, {lv} held" for lv in levels)
    p(f"| server | {head} | {top} / {l0} held (same round) | machine CPU ms per PUT, "
      f"{l0} held | {top} held |")
    p("|---|" + "---|" * (len(levels) + 3))
    for s in names:
        cells = " | ".join(col(s, lv, "put", "put") for lv in levels)
        r = [x["put"] / y["put"] for x, y in zip(runs[(s, top, "put")], runs[(s, l0, "put")])]
        p(f"| {s} | {cells} | {spread(r, ratio)} | {col(s, l0, 'put', 'machine_cpu_per')} | "
          f"{col(s, top, 'put', 'machine_cpu_per')} |")
    p("")
    p("### LOCK and UNLOCK as the table grows\n")
    p("Each LOCK and UNLOCK of the cycle, timed alone, at each level; `nikaia` rewrites its "
      "whole locks file (fdatasync, rename, directory fsync) on each.\n")
    head = " | ".join(f"LOCK ms, {lv}" for lv in levels)
    head2 = " | ".join(f"UNLOCK ms, {lv}" for lv in levels)
    p(f"| server | {head} | LOCK {top} / {l0} | {head2} |")
    p("|---|" + "---|" * (2 * len(levels) + 1))
    for s in names:
        a = " | ".join(col(s, lv, "cycle", "lock") for lv in levels)
        b = " | ".join(col(s, lv, "cycle", "unlock") for lv in levels)
        r = [x["lock"] / y["lock"] for x, y in
             zip(runs[(s, top, "cycle")], runs[(s, l0, "cycle")])]
        p(f"| {s} | {a} | {spread(r, ratio)} | {b} |")
    p("")
    p("CPU per write cycle (LOCK + PUT + UNLOCK) at each level, beside a bare PUT's:\n")
    head = " | ".join(f"server CPU ms, {lv}" for lv in levels)
    head2 = " | ".join(f"machine CPU ms, {lv}" for lv in levels)
    p(f"| server | {head} | server CPU ms per PUT, {top} | {head2} |")
    p("|---|" + "---|" * (2 * len(levels) + 1))
    for s in names:
        a = " | ".join(col(s, lv, "cycle", "server_cpu_per") for lv in levels)
        b = " | ".join(col(s, lv, "cycle", "machine_cpu_per") for lv in levels)
        p(f"| {s} | {a} | {col(s, top, 'put', 'server_cpu_per')} | {b} |")
    p("")
    p("Machine CPU counts every CPU's busy time while a batch runs: where a server waits "
      "for the disk, other work on the machine fills the idle CPU, so for a long batch it "
      "tends to 2 × wall on this 2-CPU machine and says more about the neighbours than the "
      "server; the server's own CPU is the figure to compare there.\n")
    ours = [s for s in names if s.startswith("nikaia")]
    theirs = [s for s in names if not s.startswith("nikaia")]
    if ours and theirs:
        p("Ratios to the others, same round, median (min–max):\n")
        p("| ratio | " + " | ".join(
            [f"cycle, {l0} held", f"cycle, {top} held", f"PUT, {top} held",
             f"LOCK, {top} held"]) + " |")
        p("|---|---|---|---|---|")
        for a in ours:
            for b in theirs:
                cells = [paired(a, (a, l0, "cycle"), (b, l0, "cycle"), "cycle"),
                         paired(a, (a, top, "cycle"), (b, top, "cycle"), "cycle"),
                         paired(a, (a, top, "put"), (b, top, "put"), "put"),
                         paired(a, (a, top, "cycle"), (b, top, "cycle"), "lock")]
                p(f"| {a} / {b} | " + " | ".join(cells) + " |")
        p("")
    if fills:
        p("### Taking the held locks (the fills)\n")
        p("| server | from → to | seconds | LOCK ms, median of the fill | "
          "median of its last 100 | server CPU ms per LOCK |")
        p("|---|---|---|---|---|---|")
        for (s, level), f in fills.items():
            p(f"| {s} | {f['from']} → {f['to']} | {f['seconds']:.1f} | "
              f"{ms(f['lock_median'])} | {ms(f['lock_median_last_100'])} | "
              f"{ms(f['server_cpu_per_lock'])} |")
        p("")
    for s, size in locks_files.items():
        p(f"{s}'s locks file with {top} locks held: {size / 1024:.0f} KiB.")
    if locks_files:
        p("")
    return "\n".join(out)
