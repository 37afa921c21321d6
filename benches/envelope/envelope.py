#!/usr/bin/env python3
"""The operating envelope of `nikaia serve` on loopback: what it holds and for
how long. Standard-library Python only; every case is bounded in time and
stops by itself.

  idle   10 000 idle keep-alive connections while a client is served, with
         max-connections = 10000 and = 2000 (then the server closes the
         connection idle the longest to admit a new one: idle_closed).
         Reports the probe client's successes and latency p50/p99, the
         server's RSS (VmRSS) and descriptors before/held/after, and KiB of
         RSS per idle connection.
  slow   1 000 slow readers of a 64 MiB file (SO_RCVBUF 4 KiB, 4 KiB/s each,
         60 s) while a fast client fetches a 4 KiB file; RSS sampled every
         second (max, end) against a stated bound.
  soak   30 minutes (--minutes) over 10 000 files: GET, HEAD, Range and
         If-None-Match from several client threads while a mutator edits
         files in place, renames new versions over them, truncates them and
         deletes/recreates them. Every version's bytes follow from (name,
         version), so each 200 and 206 body is checked against the versions
         the file had. RSS and descriptors every 10 s to CSV, chart to SVG.

Usage (run.sh raises `ulimit -n` first; this script raises its soft limit to
the hard one, and the server it starts inherits it):
  envelope.py idle  [--conns 10000] [--max-conns 10000,2000] [--json OUT]
  envelope.py slow  [--readers 1000] [--seconds 60] [--json OUT]
  envelope.py soak  [--minutes 30] [--csv OUT.csv] [--svg OUT.svg] [--json OUT]
  envelope.py chart SAMPLES.csv OUT.svg
`probe` and `fast` are the client processes the cases start (separate
processes, so their latencies do not include this process's GIL).
"""

import argparse
import csv
import hashlib
import json
import os
import random
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
NIKAIA = os.path.join(ROOT, "target", "release", "nikaia")


# ---------------------------------------------------------------- plumbing

def raise_nofile(want=65536):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < want:
        try:  # root may raise the hard limit
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    """VmRSS, RssAnon, RssFile in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads"):
                out[k] = int(v.split()[0])
    return out


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def sockstat():
    """Kernel TCP sockets in use and their memory (pages), machine-wide."""
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                p = line.split()[1:]
                d = dict(zip(p[::2], map(int, p[1::2])))
                return {"tcp_inuse": d.get("inuse"), "tcp_tw": d.get("tw"),
                        "tcp_mem_kib": d.get("mem", 0) * os.sysconf("SC_PAGE_SIZE") // 1024}
    return {}


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, int(round(p / 100 * (len(xs) - 1)))))
    return xs[i]


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return {"cpu": model, "cores": os.cpu_count(), "mem_mib": mem,
            "kernel": os.uname().release, "python": sys.version.split()[0],
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}


class Server:
    """`nikaia serve DIR --runtime FILE` with a stats socket and an error log."""

    def __init__(self, nikaia, root, work, **keys):
        self.port = free_port()
        self.stats = os.path.join(work, "stats.sock")
        self.error_log = os.path.join(work, "error.log")
        lines = [f'listen = "127.0.0.1:{self.port}"', 'access-log = "off"',
                 f'error-log = "{self.error_log}"', f'stats-socket = "{self.stats}"']
        for k, v in keys.items():
            v = f'"{v}"' if isinstance(v, str) else v
            lines.append(f"{k.replace('_', '-')} = {v}")
        self.runtime = os.path.join(work, "runtime.toml")
        with open(self.runtime, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.nikaia = nikaia
        self.proc = subprocess.Popen([nikaia, "serve", root, "--runtime", self.runtime],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "stderr.log"), "ab"))
        self.pid = self.proc.pid
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"nikaia did not start; see {work}/stderr.log")
                time.sleep(0.05)
        while not os.path.exists(self.stats) and time.time() < deadline:
            time.sleep(0.05)

    def explain(self):
        try:
            out = subprocess.run([self.nikaia, "explain", "--socket", self.stats, "--json"],
                                 capture_output=True, timeout=10, text=True)
            return json.loads(out.stdout)
        except (subprocess.SubprocessError, ValueError):
            return {}

    def sample(self):
        s = proc_status(self.pid)
        s["fds"] = fd_count(self.pid)
        return s

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(35)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def error_lines(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []


# ---------------------------------------------------------------- HTTP client

class Short(Exception):
    """The connection ended inside a body (the head had arrived)."""

    def __init__(self, status, headers, partial):
        super().__init__("short body")
        self.status, self.headers, self.partial = status, headers, partial


class Conn:
    """One blocking HTTP/1.1 keep-alive connection."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.closed = False

    def close(self):
        self.s.close()

    def _more(self):
        d = self.s.recv(262144)
        if not d:
            raise EOFError
        self.buf += d

    def roundtrip(self, method, path, extra=()):
        req = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        req.extend(extra)
        self.s.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                break
            self._more()  # EOFError / OSError before a head: a connection error
        head = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
        del self.buf[:i + 4]
        status = int(head[0].split()[1])
        headers = {}
        for h in head[1:]:
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        if method == "HEAD" or status in (204, 304) or status < 200:
            n = 0
        else:
            n = int(headers.get("content-length", "0"))
        try:
            while len(self.buf) < n:
                self._more()
        except (EOFError, OSError):
            partial = bytes(self.buf)
            self.buf.clear()
            self.closed = True
            raise Short(status, headers, partial)
        body = bytes(self.buf[:n])
        del self.buf[:n]
        if headers.get("connection", "").lower() == "close":
            self.closed = True
        return status, headers, body


def one_get(port, path, timeout=10.0):
    """A GET on a new connection, closed after: (status, body, seconds)."""
    t = time.perf_counter()
    c = Conn(port, timeout)
    try:
        st, _, body = c.roundtrip("GET", path, ["Connection: close"])
    finally:
        c.close()
    return st, body, time.perf_counter() - t


# ---------------------------------------------------------------- probe / fast (subprocesses)

def cmd_probe(a):
    """N sequential GETs, each on a new connection; JSON on stdout."""
    want = open(a.expect, "rb").read() if a.expect else None
    ok, lat, errors = 0, [], {}
    t_end = time.time() + a.max_seconds
    for _ in range(a.n):
        if time.time() > t_end:
            break
        try:
            st, body, dt = one_get(a.port, a.path, a.timeout)
            if st == 200 and (want is None or body == want):
                ok += 1
                lat.append(dt * 1000)
            else:
                errors[f"status {st}"] = errors.get(f"status {st}", 0) + 1
        except Exception as e:  # noqa: BLE001 - counted by kind
            k = type(e).__name__
            errors[k] = errors.get(k, 0) + 1
        if a.interval:
            time.sleep(a.interval)
    json.dump({"n": a.n, "ok": ok, "errors": errors, "lat_ms": lat}, sys.stdout)


def cmd_fast(a):
    """GETs of a small file for SECONDS: one keep-alive connection (paced) and
    one new connection per request (paced); JSON on stdout."""
    want = open(a.expect, "rb").read()
    res = {"keepalive": {"ok": 0, "fail": 0, "lat_ms": []}, "new_conn": {"ok": 0, "fail": 0, "lat_ms": []}}
    end = time.time() + a.seconds
    conn = None
    i = 0
    while time.time() < end:
        kind = "new_conn" if i % 5 == 4 else "keepalive"
        i += 1
        r = res[kind]
        t = time.perf_counter()
        try:
            if kind == "keepalive":
                if conn is None or conn.closed:
                    conn = Conn(a.port, a.timeout)
                st, _, body = conn.roundtrip("GET", a.path)
            else:
                st, body, _ = one_get(a.port, a.path, a.timeout)
            if st == 200 and body == want:
                r["ok"] += 1
                r["lat_ms"].append((time.perf_counter() - t) * 1000)
            else:
                r["fail"] += 1
        except Exception:  # noqa: BLE001
            r["fail"] += 1
            conn = None
        time.sleep(a.interval)
    json.dump(res, sys.stdout)


def start_py(args):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__)] + args,
                            stdout=subprocess.PIPE, text=True)


def summarize_lat(d):
    lat = d.pop("lat_ms")
    d["p50_ms"] = round(pct(lat, 50), 3) if lat else None
    d["p99_ms"] = round(pct(lat, 99), 3) if lat else None
    d["max_ms"] = round(max(lat), 3) if lat else None
    d["samples"] = len(lat)
    return d


# ---------------------------------------------------------------- case 1: idle

def open_idle(port, n, path, out, stop_at):
    """Opens n connections one after another; each sends one GET, reads the
    answer and then stays idle. Appends the sockets to `out`."""
    failed = 0
    for _ in range(n):
        if time.time() > stop_at:
            break
        try:
            c = Conn(port, timeout=10)
            c.roundtrip("GET", path)
            out.append(c.s)
        except Exception:  # noqa: BLE001
            failed += 1
    return failed


def count_closed(socks):
    """Sockets the server has closed: readable with EOF (or reset)."""
    closed = 0
    p = select.poll()
    for s in socks:
        p.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
    ready = {fd for fd, _ in p.poll(0)}
    for s in socks:
        if s.fileno() in ready:
            try:
                if s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
    return closed


def cmd_idle(a):
    nofile = raise_nofile()
    results = {"case": "idle", "machine": machine(), "conns": a.conns, "runs": []}
    for maxc in [int(x) for x in a.max_conns.split(",")]:
        work = tempfile.mkdtemp(prefix="envelope-idle-")
        root = os.path.join(work, "site")
        os.makedirs(root)
        small = random.Random("idle").randbytes(100)
        page = random.Random("4k").randbytes(4096)
        open(os.path.join(root, "idle.bin"), "wb").write(small)
        open(os.path.join(root, "4k.bin"), "wb").write(page)
        srv = Server(a.nikaia, root, work, workers=a.workers, max_connections=maxc,
                     keepalive_timeout="10m")
        for _ in range(20):
            one_get(srv.port, "/4k.bin")
        time.sleep(0.5)
        base = srv.sample()
        base_sock = sockstat()
        socks = []
        # The probe while connections are being opened.
        probe1 = start_py(["probe", "--port", str(srv.port), "--n", str(a.probe), "--path", "/4k.bin",
                           "--expect", os.path.join(root, "4k.bin"), "--max-seconds", "60"])
        t0 = time.time()
        failed = open_idle(srv.port, a.conns, "/idle.bin", socks, t0 + a.open_seconds)
        open_s = time.time() - t0
        p1 = json.loads(probe1.communicate()[0])
        time.sleep(1)
        held = srv.sample()
        held_sock = sockstat()
        closed_by_server = count_closed(socks)
        # The probe while all of them are held.
        probe2 = start_py(["probe", "--port", str(srv.port), "--n", str(a.probe), "--path", "/4k.bin",
                           "--expect", os.path.join(root, "4k.bin"), "--max-seconds", "60"])
        p2 = json.loads(probe2.communicate()[0])
        time.sleep(max(0.0, a.hold - 0))
        held2 = srv.sample()
        closed_by_server2 = count_closed(socks)
        stats = srv.explain()
        for s in socks:
            s.close()
        time.sleep(2)
        after = srv.sample()
        srv.stop()
        conns_held = held["fds"] - base["fds"]
        run = {
            "max_connections": maxc, "workers": a.workers, "opened": len(socks), "open_failed": failed,
            "open_seconds": round(open_s, 2),
            "closed_by_server_after_open": closed_by_server, "closed_by_server_at_end": closed_by_server2,
            "idle_closed": stats.get("idle_closed"),
            "probe_while_opening": summarize_lat(p1), "probe_while_held": summarize_lat(p2),
            "rss_kib": {"before": base["VmRSS"], "held": held["VmRSS"], "held_end": held2["VmRSS"],
                        "after_close": after["VmRSS"], "hwm": after.get("VmHWM")},
            "rss_anon_kib": {"before": base["RssAnon"], "held": held["RssAnon"], "after_close": after["RssAnon"]},
            "fds": {"before": base["fds"], "held": held["fds"], "held_end": held2["fds"], "after_close": after["fds"]},
            "conns_held_by_server": conns_held,
            "rss_kib_per_idle_conn": round((held["VmRSS"] - base["VmRSS"]) / conns_held, 2) if conns_held > 0 else None,
            "kernel_tcp": {"before": base_sock, "held": held_sock},
            "error_log_lines": len(srv.error_lines()),
        }
        results["runs"].append(run)
        print(json.dumps(run, indent=1), flush=True)
        shutil.rmtree(work, ignore_errors=True)
        time.sleep(a.pause)
    results["nofile"] = nofile
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


# ---------------------------------------------------------------- case 2: slow readers

def cmd_slow(a):
    nofile = raise_nofile()
    work = tempfile.mkdtemp(prefix="envelope-slow-")
    root = os.path.join(work, "site")
    os.makedirs(root)
    size = a.big_mib << 20
    big = random.Random("big").randbytes(size)
    open(os.path.join(root, "big.bin"), "wb").write(big)
    page = random.Random("4k").randbytes(4096)
    open(os.path.join(root, "4k.bin"), "wb").write(page)
    keys = {"workers": a.workers}
    if a.send_file:
        keys["send_file"] = a.send_file
    srv = Server(a.nikaia, root, work, **keys)
    for _ in range(20):
        one_get(srv.port, "/4k.bin")
    time.sleep(0.5)
    base = srv.sample()
    base_sock = sockstat()
    samples = []
    stop = threading.Event()

    def sampler():
        t0 = time.time()
        while not stop.is_set():
            s = srv.sample()
            s.update(sockstat())
            s["t"] = round(time.time() - t0, 1)
            samples.append(s)
            stop.wait(1.0)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    fast = start_py(["fast", "--port", str(srv.port), "--path", "/4k.bin", "--expect",
                     os.path.join(root, "4k.bin"), "--seconds", str(a.seconds), "--interval", "0.01"])
    t_start = time.time()
    readers = []  # [sock, head bytes or None, body offset, alive, bad]
    open_failed = 0
    for _ in range(a.readers):
        try:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
            s.settimeout(10)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.setblocking(False)
            readers.append([s, bytearray(), 0, True, 0])
        except OSError:
            open_failed += 1
    open_s = time.time() - t_start
    tick = 0.25
    per_tick = max(1, int(a.kib_per_s * 1024 * tick))
    end = t_start + a.seconds
    bad_status = 0
    early_eof = 0
    while time.time() < end:
        t = time.time()
        for r in readers:
            if not r[3]:
                continue
            try:
                d = r[0].recv(per_tick)
            except BlockingIOError:
                continue
            except OSError:
                r[3] = False
                early_eof += 1
                continue
            if not d:
                r[3] = False
                early_eof += 1
                continue
            if r[1] is not None:  # still reading the head
                r[1] += d
                i = r[1].find(b"\r\n\r\n")
                if i < 0:
                    continue
                head = bytes(r[1][:i])
                d = bytes(r[1][i + 4:])
                r[1] = None
                if not head.startswith(b"HTTP/1.1 200") or f"content-length: {size}".encode() not in head.lower():
                    bad_status += 1
                    r[3] = False
                    continue
            if d != big[r[2]:r[2] + len(d)]:
                r[4] += sum(1 for x, y in zip(d, big[r[2]:r[2] + len(d)]) if x != y)
            r[2] += len(d)
        time.sleep(max(0.0, tick - (time.time() - t)))
    alive = sum(1 for r in readers if r[3])
    body_bytes = [r[2] for r in readers]
    wrong = sum(r[4] for r in readers)
    at_end = srv.sample()
    at_end_sock = sockstat()
    fast_res = json.loads(fast.communicate()[0])
    stats = srv.explain()
    for r in readers:
        r[0].close()
    time.sleep(3)
    after = srv.sample()
    stop.set()
    th.join()
    srv.stop()
    rss_max = max(s["VmRSS"] for s in samples)
    growth = rss_max - base["VmRSS"]
    bound_kib = a.bound_mib_per_100 * 1024 * a.readers / 100
    res = {
        "case": "slow", "machine": machine(), "nofile": nofile, "readers": a.readers, "opened": len(readers),
        "open_failed": open_failed, "open_seconds": round(open_s, 2), "seconds": a.seconds,
        "file_mib": a.big_mib, "rcvbuf": a.rcvbuf, "kib_per_s_each": a.kib_per_s,
        "send_file": a.send_file or "auto (default)", "workers": a.workers,
        "alive_at_end": alive, "ended_early": early_eof, "bad_head": bad_status,
        "body_kib_per_reader": {"min": min(body_bytes) // 1024, "median": int(statistics.median(body_bytes)) // 1024,
                                "max": max(body_bytes) // 1024},
        "wrong_bytes": wrong,
        "fast": {k: summarize_lat(v) for k, v in fast_res.items()},
        "rss_kib": {"before": base["VmRSS"], "max": rss_max, "at_end": at_end["VmRSS"],
                    "after_close": after["VmRSS"], "anon_max": max(s["RssAnon"] for s in samples)},
        "rss_growth_kib": growth,
        "bound": f"RSS growth <= {a.bound_mib_per_100} MiB per 100 slow readers = {bound_kib / 1024:.0f} MiB",
        "within_bound": growth <= bound_kib,
        "fds": {"before": base["fds"], "max": max(s["fds"] for s in samples), "at_end": at_end["fds"],
                "after_close": after["fds"]},
        "kernel_tcp": {"before": base_sock, "at_end": at_end_sock,
                       "mem_kib_max": max(s.get("tcp_mem_kib", 0) for s in samples)},
        "truncated": stats.get("truncated"), "error_log_lines": len(srv.error_lines()),
        "series_t_rss_kib_fds_tcpmem_kib": [(s["t"], s["VmRSS"], s["fds"], s.get("tcp_mem_kib")) for s in samples],
    }
    print(json.dumps({k: v for k, v in res.items() if not k.startswith("series")}, indent=1), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- case 3: soak

def content(name, seed, n):
    """The bytes of version `seed` of file `name`, n bytes long."""
    return random.Random(f"{name}:{seed}").randbytes(n)


class Version:
    __slots__ = ("seed", "gen", "cut", "digest", "how")

    def __init__(self, seed, gen, cut, digest, how):
        self.seed, self.gen, self.cut, self.digest, self.how = seed, gen, cut, digest, how



class Site:
    """The files, their versions (all of them, in order), and the mutator."""

    def __init__(self, root, nfiles, big_share, rng):
        self.root = root
        self.names = []
        self.versions = {}  # name -> [Version]
        self.current = {}   # name -> Version or None (deleted)
        self.cls = {}       # name -> "small" | "big"
        self.lock = threading.Lock()
        self.gen_cache = {}
        for i in range(nfiles):
            name = f"d{i // 100:03d}/f{i:05d}.bin"
            big = rng.random() < big_share
            self.cls[name] = "big" if big else "small"
            n = self.pick_size(name, rng)
            b = content(name, 0, n)
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "wb") as f:
                f.write(b)
            v = Version(0, n, n, hashlib.sha1(b).digest(), "initial")
            self.versions[name] = [v]
            self.current[name] = v
            self.names.append(name)
        self.next_seed = {n: 1 for n in self.names}

    def pick_size(self, name, rng):
        if self.cls[name] == "big":
            return 1 << 20
        return int(100 * (65536 / 100) ** rng.random())  # log-uniform 100 B .. 64 KiB

    def full(self, name, v):
        """Version v's bytes (generated, with a small cache)."""
        key = (name, v.seed, v.gen)
        with self.lock:
            b = self.gen_cache.get(key)
        if b is None:
            b = content(name, v.seed, v.gen)
            with self.lock:
                if len(self.gen_cache) >= 48:
                    self.gen_cache.pop(next(iter(self.gen_cache)))
                self.gen_cache[key] = b
        return b[:v.cut]

    def new_version(self, name, n, how, prev=None):
        seed = self.next_seed[name]
        self.next_seed[name] += 1
        b = content(name, seed, n)
        v = Version(seed, n, n, hashlib.sha1(b).digest(), how)
        return v, b

    def mutate(self, name, rng, counts):
        path = os.path.join(self.root, name)
        cur = self.current[name]
        if cur is None:
            op = "recreate"
        else:
            r = rng.random()
            op = ("inplace" if r < 0.35 else "rename" if r < 0.70 else "truncate" if r < 0.85 else "delete")
            if op in ("inplace", "truncate") and cur.cut == 0:
                op = "rename"
        if op in ("rename", "recreate"):
            v, b = self.new_version(name, self.pick_size(name, rng), op)
            tmp = f"{path}.tmp{rng.randrange(1 << 30)}"
            with open(tmp, "wb") as f:
                f.write(b)
            self.versions[name].append(v)  # known before anyone can see it
            os.rename(tmp, path)
            self.current[name] = v
        elif op == "inplace":
            v, b = self.new_version(name, cur.cut, op)
            self.versions[name].append(v)
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, b, 0)
            finally:
                os.close(fd)
            self.current[name] = v
        elif op == "truncate":
            n = rng.randrange(0, cur.cut)
            v = Version(cur.seed, cur.gen, n, hashlib.sha1(self.full(name, cur)[:n]).digest(), op)
            self.versions[name].append(v)
            os.truncate(path, n)
            self.current[name] = v
        else:  # delete
            os.unlink(path)
            self.current[name] = None
        counts[op] = counts.get(op, 0) + 1


class Checker:
    """Per-thread tallies."""

    def __init__(self):
        self.by = {}          # "KIND STATUS" -> n
        self.wrong_bytes = 0
        self.wrong_responses = 0
        self.torn = 0         # every byte from some version, but several versions mixed
        self.zeroed = 0       # bytes read as zero after a truncation cut (sendfile, spec/files.md)
        self.short = 0        # closed short (the file shrank under the send)
        self.short_wrong_bytes = 0
        self.conn_errors = {}
        self.s5xx = 0
        self.head_mismatch = 0
        self.zeroed_resp = {}  # "complete|short size<=8KiB|>8KiB" -> responses with zeroed bytes
        self.other_length = 0  # the bytes of one version, at another length than any version had
        self.range_mismatch = 0
        self.bytes = 0
        self.examples = []

    def note_zeroed(self, how, size):
        k = f"{how} {'file<=8KiB' if size <= 8192 else 'file>8KiB'}"
        self.zeroed_resp[k] = self.zeroed_resp.get(k, 0) + 1

    def add(self, kind, status):
        k = f"{kind} {status}"
        self.by[k] = self.by.get(k, 0) + 1
        if status >= 500:
            self.s5xx += 1

    def compare(self, site, name, body, offset=0, short=False):
        """body = bytes [offset, offset+len) of some version (or a mix of
        versions, in place). Returns (wrong, zero-after-cut, mixed)."""
        vs = list(site.versions[name])[-24:]  # a send outlives few versions
        L = len(body)
        fulls = [(v, site.full(name, v)) for v in reversed(vs)]
        wrong = zeroed = 0
        used = set()
        CH = 256
        for c0 in range(0, L, CH):
            chunk = body[c0:c0 + CH]
            a = offset + c0
            hit = None
            for idx, (v, b) in enumerate(fulls):
                if b[a:a + len(chunk)] == chunk:
                    hit = idx
                    break
            if hit is not None:
                used.add(hit)
                continue
            for j, x in enumerate(chunk):
                p = a + j
                found = False
                for idx, (v, b) in enumerate(fulls):
                    if p < len(b) and b[p] == x:
                        found = True
                        used.add(idx)
                        break
                if not found:
                    if x == 0 and any(v.cut <= p for v in vs):
                        zeroed += 1
                    else:
                        wrong += 1
        return wrong, zeroed, len(used) > 1


def soak_client(site, port, end, seed, chk, hot, etags_shared):
    rng = random.Random(seed)
    etags = {}
    conn = None
    while time.time() < end:
        name = rng.choice(hot) if rng.random() < 0.7 else rng.choice(site.names)
        r = rng.random()
        kind = "GET" if r < 0.5 else "HEAD" if r < 0.65 else "RANGE" if r < 0.85 else "COND"
        extra = []
        method = "HEAD" if kind == "HEAD" else "GET"
        if kind == "RANGE":
            cur = site.current[name]
            n = cur.cut if cur is not None and cur.cut > 0 else 1000
            a_ = rng.randrange(0, n)
            b_ = min(n - 1, a_ + rng.choice((0, 99, 4095, 65535, 300000)))
            extra.append(f"Range: bytes={a_}-{b_}")
        elif kind == "COND" and name in etags:
            extra.append(f"If-None-Match: {etags[name]}")
        try:
            if conn is None or conn.closed:
                conn = Conn(port, timeout=30)
            st, h, body = conn.roundtrip(method, "/" + name, extra)
        except Short as e:
            chk.add(kind, e.status)
            chk.short += 1
            off = 0
            if e.status == 206:
                off = int(e.headers["content-range"].split()[1].split("-")[0])
            w, z, _ = chk.compare(site, name, e.partial, off, short=True)
            chk.short_wrong_bytes += w
            chk.zeroed += z
            if z:
                chk.note_zeroed("short", int(e.headers.get("content-length", "0")))
            chk.bytes += len(e.partial)
            conn = None
            continue
        except (OSError, EOFError) as e:
            k = type(e).__name__
            chk.conn_errors[k] = chk.conn_errors.get(k, 0) + 1
            if conn is not None:
                conn.close()
            conn = None
            continue
        chk.add(kind, st)
        chk.bytes += len(body)
        if st == 200 and method == "GET":
            if "etag" in h:
                etags[name] = h["etag"]
            d = hashlib.sha1(body).digest()
            if not any(v.cut == len(body) and v.digest == d for v in reversed(site.versions[name])):
                w, z, mixed = chk.compare(site, name, body)
                chk.zeroed += z
                if z:
                    chk.note_zeroed("complete", len(body))
                if w:
                    chk.wrong_bytes += w
                    chk.wrong_responses += 1
                    if len(chk.examples) < 10:
                        chk.examples.append({"name": name, "kind": kind, "len": len(body), "wrong": w, "zeroed": z})
                elif mixed:
                    chk.torn += 1
                elif not z:
                    chk.other_length += 1
        elif st == 206:
            cr = h.get("content-range", "")
            try:
                rng_, total = cr.split()[1].split("/")
                a_, b_ = map(int, rng_.split("-"))
                total = int(total)
            except (IndexError, ValueError):
                chk.range_mismatch += 1
                continue
            ok = len(body) == b_ - a_ + 1
            if ok:
                ok = False
                for v in reversed(site.versions[name]):
                    if v.cut == total and site.full(name, v)[a_:b_ + 1] == body:
                        ok = True
                        break
            if not ok:
                w, z, mixed = chk.compare(site, name, body, a_)
                chk.zeroed += z
                if z:
                    chk.note_zeroed("complete-206", total)
                if w:
                    chk.wrong_bytes += w
                    chk.wrong_responses += 1
                    if len(chk.examples) < 10:
                        chk.examples.append({"name": name, "kind": kind, "range": cr, "wrong": w, "zeroed": z})
                elif mixed:
                    chk.torn += 1
                elif not z:
                    chk.other_length += 1
        elif st == 200 and method == "HEAD":
            n = int(h.get("content-length", "-1"))
            if not any(v.cut == n for v in site.versions[name]):
                chk.head_mismatch += 1
        if conn is not None and conn.closed:
            conn.close()
            conn = None


def cmd_soak(a):
    nofile = raise_nofile()
    work = tempfile.mkdtemp(prefix="envelope-soak-", dir=a.dir)
    root = os.path.join(work, "site")
    os.makedirs(root)
    rng = random.Random(a.seed)
    t = time.time()
    site = Site(root, a.files, a.big_share, rng)
    print(f"fixture: {a.files} files, {sum(v.cut for v in site.current.values()) >> 20} MiB, "
          f"{sum(1 for c in site.cls.values() if c == 'big')} of 1 MiB, {time.time() - t:.1f} s", flush=True)
    time.sleep(0.05)
    srv = Server(a.nikaia, root, work, workers=a.workers)
    hot = rng.sample(site.names, a.hot)
    start = time.time()
    end = start + a.minutes * 60
    checkers = [Checker() for _ in range(a.clients)]
    threads = [threading.Thread(target=soak_client, args=(site, srv.port, end, a.seed * 1000 + i, checkers[i], hot, None),
                                daemon=True) for i in range(a.clients)]
    mut_counts = {}
    mut_errors = []

    def mutator():
        mrng = random.Random(a.seed + 7)
        period = 1.0 / a.mutations_per_s
        nxt = time.time()
        while time.time() < end:
            name = mrng.choice(hot) if mrng.random() < 0.8 else mrng.choice(site.names)
            try:
                site.mutate(name, mrng, mut_counts)
            except OSError as e:
                mut_errors.append(str(e))
            nxt += period
            time.sleep(max(0.0, nxt - time.time()))

    mt = threading.Thread(target=mutator, daemon=True)
    csv_path = a.csv
    samples = []
    fcsv = open(csv_path, "w", newline="")
    w = csv.writer(fcsv)
    w.writerow(["t_s", "rss_kib", "rss_anon_kib", "rss_file_kib", "fds", "requests", "mutations", "truncated", "threads"])
    for th in threads:
        th.start()
    mt.start()
    while True:
        now = time.time()
        s = srv.sample()
        st = srv.explain()
        nreq = sum(sum(c.by.values()) for c in checkers)
        row = [round(now - start, 1), s["VmRSS"], s["RssAnon"], s["RssFile"], s["fds"], nreq,
               sum(mut_counts.values()), st.get("truncated", ""), s.get("Threads", "")]
        w.writerow(row)
        fcsv.flush()
        samples.append(row)
        if len(samples) % 30 == 1:
            print(f"[{(now - start) / 60:5.1f} min] rss {s['VmRSS']} KiB fds {s['fds']} requests {nreq} "
                  f"mutations {row[6]} wrong {sum(c.wrong_bytes for c in checkers)}", flush=True)
        if now >= end:
            break
        time.sleep(max(0.2, min(a.sample_s, end - time.time())))
    for th in threads:
        th.join(60)
    mt.join(10)
    final = srv.sample()
    stats = srv.explain()
    srv.stop()
    fcsv.close()
    errs = srv.error_lines()
    tot = Checker()
    for c in checkers:
        for k, v in c.by.items():
            tot.by[k] = tot.by.get(k, 0) + v
        for k, v in c.zeroed_resp.items():
            tot.zeroed_resp[k] = tot.zeroed_resp.get(k, 0) + v
        for k, v in c.conn_errors.items():
            tot.conn_errors[k] = tot.conn_errors.get(k, 0) + v
        for f in ("wrong_bytes", "wrong_responses", "torn", "zeroed", "short", "short_wrong_bytes", "s5xx",
                  "head_mismatch", "range_mismatch", "bytes", "other_length"):
            setattr(tot, f, getattr(tot, f) + getattr(c, f))
        tot.examples += c.examples
    first = [r for r in samples if r[0] <= 300]
    last = [r for r in samples if r[0] >= samples[-1][0] - 300]
    med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
    rss_first, rss_last = med(first, 1), med(last, 1)
    fd_first, fd_last = med(first, 4), med(last, 4)
    flat_rss = rss_last <= rss_first * 1.10 + 4096
    flat_fds = fd_last <= fd_first + 16
    dur = samples[-1][0]
    res = {
        "case": "soak", "machine": machine(), "nofile": nofile, "minutes": a.minutes, "seconds_run": dur,
        "files": a.files, "big_files": sum(1 for c in site.cls.values() if c == "big"), "hot": a.hot,
        "clients": a.clients, "workers": a.workers, "mutations_per_s": a.mutations_per_s,
        "requests": sum(tot.by.values()), "requests_per_s": round(sum(tot.by.values()) / dur, 1),
        "by_kind_status": dict(sorted(tot.by.items())), "mib_received": tot.bytes >> 20,
        "wrong_bytes": tot.wrong_bytes, "wrong_responses": tot.wrong_responses,
        "mixed_versions_in_place": tot.torn, "zeroed_after_cut": tot.zeroed, "zeroed_responses": tot.zeroed_resp,
        "other_length": tot.other_length, "closed_short": tot.short, "closed_short_wrong_bytes": tot.short_wrong_bytes,
        "5xx": tot.s5xx, "head_length_mismatch": tot.head_mismatch, "range_header_mismatch": tot.range_mismatch,
        "connection_errors": tot.conn_errors, "wrong_examples": tot.examples[:10],
        "mutations": mut_counts, "mutation_errors": len(mut_errors),
        "server_truncated": stats.get("truncated"), "server_stats": stats,
        "error_log_lines": len(errs), "error_log_sample": errs[:5],
        "samples": len(samples), "sample_every_s": a.sample_s,
        "rss_kib": {"first5_median": rss_first, "last5_median": rss_last, "max": max(r[1] for r in samples),
                    "min": min(r[1] for r in samples), "end": final["VmRSS"]},
        "rss_anon_kib": {"first5_median": med(first, 2), "last5_median": med(last, 2),
                         "max": max(r[2] for r in samples)},
        "fds": {"first5_median": fd_first, "last5_median": fd_last, "max": max(r[4] for r in samples),
                "min": min(r[4] for r in samples)},
        "flat": {"rss": flat_rss, "fds": flat_fds,
                 "rule": "last-5-min median <= first-5-min median x 1.10 + 4 MiB (RSS); <= +16 (fds)"},
        "csv": csv_path,
    }
    print(json.dumps(res, indent=1), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if a.svg:
        chart(csv_path, a.svg, res)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- chart

def chart(csv_path, out, res=None):
    rows = list(csv.DictReader(open(csv_path)))
    t = [float(r["t_s"]) / 60 for r in rows]
    rss = [int(r["rss_kib"]) / 1024 for r in rows]
    anon = [int(r["rss_anon_kib"]) / 1024 for r in rows]
    fds = [int(r["fds"]) for r in rows]
    W, H = 720, 420
    x0, x1 = 70, W - 30
    tmax = max(t) or 1

    def panel(y0, h, series, ymax, unit, title):
        o = [f'<text x="{x0}" y="{y0 - 8}" class="t">{escape(title)}</text>',
             f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{h}" class="frame"/>']
        for k in range(5):
            v = ymax * k / 4
            yy = y0 + h - h * k / 4
            o.append(f'<line x1="{x0}" x2="{x1}" y1="{yy:.1f}" y2="{yy:.1f}" class="g"/>')
            o.append(f'<text x="{x0 - 6}" y="{yy + 4:.1f}" class="a" text-anchor="end">{v:.0f}{unit}</text>')
        for name, ys, cls in series:
            pts = " ".join(f"{x0 + (x1 - x0) * tt / tmax:.1f},{y0 + h - h * yv / ymax:.1f}" for tt, yv in zip(t, ys))
            o.append(f'<polyline points="{pts}" class="{cls}"/>')
        return o

    rmax = max(max(rss) * 1.25, 8)
    fmax = max(max(fds) * 1.25, 16)
    out_l = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             'font-family="sans-serif" font-size="12">',
             '<style>.t{font-weight:bold}.a{fill:#555;font-size:11px}.frame{fill:none;stroke:#999}'
             '.g{stroke:#eee}.rss{fill:none;stroke:#1f5fa8;stroke-width:1.5}.anon{fill:none;stroke:#d2691e;'
             'stroke-width:1.5;stroke-dasharray:4 3}.fds{fill:none;stroke:#2e8b57;stroke-width:1.5}</style>',
             f'<rect width="{W}" height="{H}" fill="white"/>']
    title = "nikaia serve, soak: server RSS (MiB) — VmRSS solid, RssAnon dashed"
    out_l += panel(40, 140, [("rss", rss, "rss"), ("anon", anon, "anon")], rmax, "", title)
    out_l += panel(230, 120, [("fds", fds, "fds")], fmax, "", "open descriptors (/proc/PID/fd)")
    for k in range(7):
        mm = tmax * k / 6
        xx = x0 + (x1 - x0) * k / 6
        out_l.append(f'<text x="{xx:.1f}" y="{370}" class="a" text-anchor="middle">{mm:.0f}</text>')
    out_l.append(f'<text x="{(x0 + x1) / 2}" y="388" class="a" text-anchor="middle">minutes, one sample every '
                 f'{(t[1] - t[0]) * 60 if len(t) > 1 else 0:.0f} s ({len(t)} samples)</text>')
    if res:
        note = (f"{res['requests']} requests, {sum(res['mutations'].values())} mutations, "
                f"wrong bytes {res['wrong_bytes']}, 5xx {res['5xx']}")
        out_l.append(f'<text x="{x0}" y="410" class="a">{escape(note)}</text>')
    out_l.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(out_l) + "\n")


def cmd_chart(a):
    res = json.load(open(a.json)) if a.json else None
    chart(a.csv, a.svg, res)


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("--nikaia", default=NIKAIA)
        sp.add_argument("--workers", type=int, default=2)
        sp.add_argument("--json")

    s = sub.add_parser("idle")
    common(s)
    s.add_argument("--conns", type=int, default=10000)
    s.add_argument("--max-conns", default="10000,2000")
    s.add_argument("--probe", type=int, default=200, help="GETs on new connections, twice")
    s.add_argument("--hold", type=float, default=5.0, help="seconds to hold after the second probe")
    s.add_argument("--open-seconds", type=float, default=120.0, help="give up opening after this long")
    s.add_argument("--pause", type=float, default=5.0)
    s.set_defaults(fn=cmd_idle)

    s = sub.add_parser("slow")
    common(s)
    s.add_argument("--readers", type=int, default=1000)
    s.add_argument("--seconds", type=float, default=60)
    s.add_argument("--big-mib", type=int, default=64)
    s.add_argument("--rcvbuf", type=int, default=4096)
    s.add_argument("--kib-per-s", type=float, default=4)
    s.add_argument("--send-file", default=None, help='runtime send-file, e.g. "never" (default: auto)')
    s.add_argument("--bound-mib-per-100", type=float, default=2.0)
    s.set_defaults(fn=cmd_slow)

    s = sub.add_parser("soak")
    common(s)
    s.add_argument("--minutes", type=float, default=30)
    s.add_argument("--files", type=int, default=10000)
    s.add_argument("--big-share", type=float, default=0.02, help="share of 1 MiB files")
    s.add_argument("--hot", type=int, default=256, help="files most requests and mutations go to")
    s.add_argument("--clients", type=int, default=4)
    s.add_argument("--mutations-per-s", type=float, default=50)
    s.add_argument("--sample-s", type=float, default=10)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--dir", default=None, help="where the fixture goes (default: $TMPDIR)")
    s.add_argument("--csv", default="soak.csv")
    s.add_argument("--svg")
    s.add_argument("--keep", action="store_true")
    s.set_defaults(fn=cmd_soak)

    s = sub.add_parser("chart")
    s.add_argument("csv")
    s.add_argument("svg")
    s.add_argument("--json")
    s.set_defaults(fn=cmd_chart)

    s = sub.add_parser("probe")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--n", type=int, default=200)
    s.add_argument("--path", default="/4k.bin")
    s.add_argument("--expect")
    s.add_argument("--timeout", type=float, default=10)
    s.add_argument("--interval", type=float, default=0)
    s.add_argument("--max-seconds", type=float, default=120)
    s.set_defaults(fn=cmd_probe)

    s = sub.add_parser("fast")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--path", default="/4k.bin")
    s.add_argument("--expect", required=True)
    s.add_argument("--seconds", type=float, default=60)
    s.add_argument("--interval", type=float, default=0.01)
    s.add_argument("--timeout", type=float, default=10)
    s.set_defaults(fn=cmd_fast)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
