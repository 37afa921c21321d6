#!/usr/bin/env python3
"""nikaia serve beside nginx with the clients in a network namespace of their
own, behind a veth pair, server and clients pinned to different CPUs.

Why: on loopback (bench.py) the clients share the two cores with the server,
and every figure mixes the two. Here the servers listen on the root
namespace's end of a veth pair (10.201.0.1) and run under `taskset -c 0`;
wrk, curl and the slow-client reader run in the namespace `nikaia-bench`
(10.201.0.2) under `taskset -c 1`. Receive processing is steered to each
side's own CPU with RPS (--no-rps leaves the kernel's default: the receiver's
TCP work then runs on the sender's CPU, in softirq). --rate adds a tbf or htb
qdisc on the server's end (the download direction).

Needs root (ip netns, ip link, tc), wrk, curl, nginx and python3; makes the
namespace and the veth pair and removes them on exit, on Ctrl-C, on SIGTERM
and on error, and removes leftovers of an earlier run with the same names
first. Nothing else on the machine is changed.

Sections (all by default, or those --only names), each server alternated
round by round, median (min–max) over --repeats rounds:

  throughput  4 KiB × 64 named, the constant 4 KiB page, 1 MiB × 64 named
              (wrk -t1 -c32): nikaia, nginx sendfile on and nginx sendfile
              off; per round nikaia over the better nginx by machine CPU.
  fairness    p50/p99 of the 4 KiB page (wrk -c4) unloaded and while four
              curl clients pull a 1 GiB sparse file in a loop.
  slow        1000 clients each reading a 1 GiB file at a few hundred KB/s
              (one asyncio process, small SO_RCVBUF, throttled by reading
              less): server RSS (VmRSS sampled, VmHWM), CPU, kernel TCP
              memory and the page's p50/p99 meanwhile.
  workers     nikaia and nginx with 1 and 2 workers: requests/s, CPU per
              request and context switches a second, the server on CPU 0
              alone or on both CPUs.

usage: sudo python3 benches/http/netns.py --nikaia target/release/nikaia
           [--quick] [--repeats N] [--seconds S] [--only SECTION ...]
           [--rate 1gbit [--qdisc tbf|htb]] [--no-rps] [--json FILE]

--quick: 2 rounds of 2 s, a smoke test (about 4 minutes); a full run with
the defaults (10 rounds of 5 s) takes about 30 minutes on a quiet machine.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (fixture, Server, wrk parsing, quiet waiting, lua rotation)

# The names this script owns: everything it makes is called so, and
# everything it removes is called so.
NS = "nikaia-bench"
VETH_SRV = "nkb-srv"      # stays in the root namespace, the servers' side
VETH_CLI = "nkb-cli"      # moved into NS, the clients' side
SRV_ADDR = "10.201.0.1"
CLI_ADDR = "10.201.0.2"
PREFIX_LEN = 30

CLK_TCK = bench.CLK_TCK
US_PER_TICK = 1e6 / CLK_TCK

VETH_TEXT = """\
What veth shows and does not show. The clients' sockets are in another
network namespace, so the server's bytes cross a real (virtual) device: a
qdisc, the device's transmit path, and the receiver's TCP stack, with the
receiving copy done by the client on its own CPU. That separates the
client's CPU from the server's, which loopback on two cores cannot. What it
does not have: a wire (no propagation delay, no loss; this kernel has no
netem to add them), a NIC's offloads, interrupt coalescing and NAPI polling
on real hardware, or DMA. veth passes TSO/GSO packets of up to 64 KiB
through whole (as if the NIC segmented for free) and GRO is off unless
enabled, so per-packet costs differ from a NIC's in both directions. Both
ends are still on one host: the copy into the client still happens, now on
the other CPU, and memory bandwidth is shared. A --rate qdisc sits on the
server's transmit side and queues every answer, small and large, in one
queue, so under --rate the fairness figures include that queue."""


# ------------------------------------------------------------------ commands

def sh(*cmd, check=True, quiet=False):
    """Runs a command; with check=False a failure is returned, not raised."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def in_ns(args, cmd):
    """`cmd` in the clients' namespace, on the clients' CPUs."""
    return ["ip", "netns", "exec", NS, *(["taskset", "-c", args.client_cpus] if args.client_cpus else []), *cmd]


# ------------------------------------------------------------------ the net

class Net:
    """The namespace, the veth pair, its addresses, RPS and the optional
    rate qdisc. setup() removes leftovers first; teardown() is idempotent."""

    def __init__(self, args):
        self.args = args
        self.made = False

    def leftovers(self):
        """Removes what an earlier, interrupted run of this script left: any
        process still in our namespace (only ours run there), the veth pair
        (deleting one end deletes both, with their qdiscs) and the namespace."""
        if NS in sh("ip", "netns", "list", check=False).stdout.split():
            for pid in sh("ip", "netns", "pids", NS, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", NS, check=False)
        if sh("ip", "link", "show", VETH_SRV, check=False).returncode == 0:
            sh("ip", "link", "del", VETH_SRV, check=False)

    def setup(self):
        self.leftovers()
        self.made = True
        sh("ip", "netns", "add", NS)
        sh("ip", "link", "add", VETH_SRV, "type", "veth", "peer", "name", VETH_CLI)
        sh("ip", "link", "set", VETH_CLI, "netns", NS)
        sh("ip", "addr", "add", f"{SRV_ADDR}/{PREFIX_LEN}", "dev", VETH_SRV)
        sh("ip", "link", "set", VETH_SRV, "up")
        sh("ip", "-n", NS, "addr", "add", f"{CLI_ADDR}/{PREFIX_LEN}", "dev", VETH_CLI)
        sh("ip", "-n", NS, "link", "set", VETH_CLI, "up")
        sh("ip", "-n", NS, "link", "set", "lo", "up")
        if self.args.rps and self.args.server_cpus and self.args.client_cpus:
            # veth hands a packet to the receiver on the sending CPU's backlog;
            # RPS moves each side's receive processing onto its own CPU.
            sh("sh", "-c", f"echo {cpumask(self.args.server_cpus)} > /sys/class/net/{VETH_SRV}/queues/rx-0/rps_cpus")
            sh("ip", "netns", "exec", NS, "sh", "-c",
               f"echo {cpumask(self.args.client_cpus)} > /sys/class/net/{VETH_CLI}/queues/rx-0/rps_cpus")
        if self.args.rate:
            self.add_rate(self.args.rate, self.args.qdisc)

    def add_rate(self, rate, kind):
        """Limits the download direction (server → clients) to `rate`."""
        bps = tc_rate_bits(rate)
        # tbf needs a bucket at least one GSO packet (64 KiB) deep, and
        # enough for 10 ms at the rate so the shaper is not the tick.
        burst = max(128 << 10, bps // 8 // 100)
        if kind == "tbf":
            sh("tc", "qdisc", "add", "dev", VETH_SRV, "root", "tbf", "rate", rate,
               "burst", str(burst), "latency", "50ms")
        else:
            sh("tc", "qdisc", "add", "dev", VETH_SRV, "root", "handle", "1:", "htb", "default", "1")
            sh("tc", "class", "add", "dev", VETH_SRV, "parent", "1:", "classid", "1:1", "htb",
               "rate", rate, "ceil", rate, "burst", str(burst), "quantum", "65536")

    def qdisc(self):
        return " / ".join(l.strip() for l in sh("tc", "qdisc", "show", "dev", VETH_SRV, check=False)
                          .stdout.splitlines() if l.strip()) or "?"

    def teardown(self):
        if not self.made:
            return
        self.made = False
        if self.args.rate:
            sh("tc", "qdisc", "del", "dev", VETH_SRV, "root", check=False)
        self.leftovers()


def cpumask(cpus):
    """'1' or '0,1' or '0-1' → hex mask for rps_cpus."""
    mask = 0
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        for c in range(int(a), int(b or a) + 1):
            mask |= 1 << c
    return f"{mask:x}"


def tc_rate_bits(rate):
    """tc's rate syntax (1gbit, 500mbit, 100kbit, 10mbps) → bits/s."""
    r = rate.lower()
    for suffix, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3), ("bit", 1),
                         ("gbps", 8 * 10**9), ("mbps", 8 * 10**6), ("kbps", 8 * 10**3), ("bps", 8)):
        if r.endswith(suffix):
            return int(float(r[:-len(suffix)]) * mult)
    raise SystemExit(f"--rate {rate}: use tc's units, e.g. 1gbit, 500mbit")


def online_cpus():
    out = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            a, _, b = part.partition("-")
            out += range(int(a), int(b or a) + 1)
    return out


# ------------------------------------------------------------------ servers

class NsServer(bench.Server):
    """bench.Server listening on the server's veth address, under taskset;
    nginx with `workers` worker processes and sendfile on or off."""

    host = SRV_ADDR

    def __init__(self, kind, args, root, work, label, workers=1, sendfile=True, cpus=None):
        # Each server its own directory: nginx keeps its pid file and conf there.
        d = os.path.join(work, label.replace(" ", "_").replace(",", ""))
        os.makedirs(d, exist_ok=True)
        super().__init__(kind, args, root, d)
        self.label, self.workers, self.sendfile = label, workers, sendfile
        cpus = cpus if cpus is not None else args.server_cpus
        self.cpus = cpus
        self.prefix = ("taskset", "-c", cpus) if cpus else ()

    def nginx_conf(self):
        conf = super().nginx_conf()
        conf = conf.replace("listen 127.0.0.1:", f"listen {self.host}:")
        conf = conf.replace("worker_processes 1;", f"worker_processes {self.workers};")
        if not self.sendfile:
            conf = conf.replace("sendfile on;", "sendfile off;")
        return conf

    def start(self):
        super().start()
        self.all_pids = self.pids()
        remember_pids(self.all_pids)

    def stop(self):
        super().stop()
        forget_pids(getattr(self, "all_pids", []))

    def pids(self):
        """The processes whose CPU and memory count as the server's: nikaia's
        one process; nginx's master and its workers (the workers do the work)."""
        if self.kind != "nginx":
            return [self.proc.pid]
        for _ in range(100):
            kids = [int(p) for p in sh("pgrep", "-P", str(self.proc.pid), check=False).stdout.split()]
            if len(kids) >= self.workers:
                return [self.proc.pid] + kids
            time.sleep(0.05)
        raise SystemExit(f"{self.label}: expected {self.workers} nginx workers")

    def cpu(self):
        return sum(safe(bench.proc_cpu, p, 0) for p in self.all_pids)

    def unit_cpu(self):
        """{unit: jiffies} per worker: nikaia's worker threads, nginx's worker processes."""
        if self.kind == "nginx":
            return {p: safe(bench.proc_cpu, p, 0) for p in self.all_pids[1:]}
        return bench.worker_cpu(self.proc.pid)

    def switches(self):
        """Voluntary + involuntary context switches of every thread so far."""
        n = 0
        for pid in self.all_pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/status") as f:
                        for line in f:
                            if "ctxt_switches:" in line:  # voluntary_ and nonvoluntary_
                                n += int(line.split()[-1])
                except OSError:
                    pass
        return n

    def memory(self):
        """(VmRSS, VmHWM) in KiB, summed over the workers (nginx) or the
        process (nikaia); nginx's master is left out: it serves nothing."""
        pids = self.all_pids[1:] if self.kind == "nginx" else self.all_pids
        rss = hwm = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            rss += int(line.split()[1])
                        elif line.startswith("VmHWM:"):
                            hwm += int(line.split()[1])
            except OSError:
                pass
        return rss, hwm


def safe(fn, arg, default):
    try:
        return fn(arg)
    except OSError:
        return default


# Servers this script started (nginx: master and workers), so that a run
# killed with SIGKILL (no finally) is cleaned up by the next one. A process
# is known by its pid and its start time (/proc/PID/stat field 22), so a
# pid reused since by someone else is left alone.
PID_FILE = None


def start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def remember_pids(pids):
    with open(PID_FILE, "a") as f:
        for pid in pids:
            f.write(f"{pid} {start_time(pid)}\n")


def forget_pids(pids):
    if not PID_FILE or not os.path.exists(PID_FILE):
        return
    gone = {str(p) for p in pids}
    with open(PID_FILE) as f:
        keep = [l for l in f if l.split()[0] not in gone]
    with open(PID_FILE, "w") as f:
        f.writelines(keep)


def kill_remembered():
    """Ends the servers an earlier crashed run left: SIGTERM (nginx's master
    then stops its workers), then SIGKILL for any still there after 5 s."""
    if not os.path.exists(PID_FILE):
        return
    with open(PID_FILE) as f:
        ours = [int(pid) for pid, st in (l.split() for l in f if l.strip()) if start_time(pid) == st]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in ours:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 5
        while sig == signal.SIGTERM and time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in ours):
            time.sleep(0.1)
    os.unlink(PID_FILE)


# ------------------------------------------------------------------ instruments

def read_stat():
    """/proc/stat: {'cpu': [fields], 'cpu0': [...], ..., 'ctxt': n}."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            k, *v = line.split()
            if k.startswith("cpu"):
                out[k] = list(map(int, v))
            elif k == "ctxt":
                out[k] = int(v[0])
    return out


def busy(fields):
    """Non-idle jiffies as bench.machine_busy counts them (idle and iowait out)."""
    return sum(fields) - fields[3] - fields[4]


def cpus_busy_pct(s0, s1, cpus):
    """Busy % of the CPUs in the list `cpus` (e.g. '0' or '0,1'), together."""
    names = [f"cpu{c}" for c in expand(cpus)] if cpus else ["cpu"]
    b = sum(busy(s1[n]) - busy(s0[n]) for n in names)
    t = sum(sum(s1[n]) - sum(s0[n]) for n in names)
    return 100.0 * b / t * len(names) if t else 0.0  # % of one core


def expand(cpus):
    out = []
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def tree_cpu(pid):
    """utime+stime of a process plus its reaped children (cutime+cstime): a
    shell looping on curl carries its finished curls' CPU."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])
    except OSError:
        return 0


class Snap:
    """Everything a run's figures are differences of."""

    def __init__(self, server, background=()):
        self.t = time.time()
        self.stat = read_stat()
        self.server = server.cpu()
        self.switches = server.switches()
        self.units = server.unit_cpu()
        self.children = bench.children_cpu_us()
        self.background = sum(tree_cpu(p) for p in background)


def figures(args, server, a, b, total):
    """The figures of one run between snapshots a and b with `total` requests."""
    wall = b.t - a.t
    m = busy(b.stat["cpu"]) - busy(a.stat["cpu"])
    steal = b.stat["cpu"][7] - a.stat["cpu"][7]
    srv = b.server - a.server
    clients_us = (b.children - a.children) + (b.background - a.background) * US_PER_TICK
    # Others: what the machine did beyond the server, the clients and steal
    # (steal is the hypervisor's, shown apart). Softirq that ran in the
    # server's or a client's context is already in their times here (this
    # kernel has no IRQ_TIME_ACCOUNTING); the rest counts as others.
    other = max(0.0, (m - steal - srv) * US_PER_TICK - clients_us) / (wall * 1e6) * 100
    r = {
        "wall_s": wall,
        "server_us": srv * US_PER_TICK / total if total else None,
        "machine_us": m * US_PER_TICK / total if total else None,
        "server_cpu_pct": srv * US_PER_TICK / (wall * 1e6) * 100,
        "server_cpus_busy_pct": cpus_busy_pct(a.stat, b.stat, args.server_cpus),
        "client_cpus_busy_pct": cpus_busy_pct(a.stat, b.stat, args.client_cpus),
        "steal_pct": steal * US_PER_TICK / (wall * 1e6) * 100,
        "other_cpu_pct": other,
        "ctxt_per_s": (b.stat["ctxt"] - a.stat["ctxt"]) / wall,
        "server_ctxt_per_s": (b.switches - a.switches) / wall,
    }
    used = {u: b.units[u] - a.units.get(u, 0) for u in b.units}
    t = sum(used.values())
    r["worker_shares"] = sorted((100.0 * x / t for x in used.values()), reverse=True) if t else []
    return r


def wrk(args, server, url, seconds, conns, script=None, background=()):
    """One wrk run from the namespace; its figures and the server's."""
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    a = Snap(server, background)
    out = subprocess.run(in_ns(args, cmd + [url]), capture_output=True, text=True, check=True).stdout
    b = Snap(server, background)
    rps, mibs, total, lat = bench.parse_wrk(out)
    r = figures(args, server, a, b, total)
    r.update(rps=rps, mibs=mibs, requests=total, p50_us=lat.get("50"), p99_us=lat.get("99"),
             socket_errors=bench.wrk_socket_errors(out))
    return r


def guarded(args, run, redone, what):
    """One measured run, after a quiet second; redone (up to --retries) if
    others or steal took more than --max-other / --max-steal % of a core."""
    for attempt in range(args.retries + 1):
        bench.wait_quiet(args.max_other, args.max_wait)
        r = run()
        if (r["other_cpu_pct"] <= args.max_other and r["steal_pct"] <= args.max_steal) or attempt == args.retries:
            r["redone"] = attempt
            return r
        redone.append((what, round(r["other_cpu_pct"]), round(r["steal_pct"])))
        log(f"  redo {what}: others {r['other_cpu_pct']:.0f}%, steal {r['steal_pct']:.0f}%")


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def order(servers, rep):
    """Round `rep`'s order: rotated, so no server always goes first."""
    k = rep % len(servers)
    return servers[k:] + servers[:k]


def check(args, servers, root):
    """Every server answers the fixture's files whole, from the namespace."""
    for s in servers:
        for path in ("page.html", "4k/0.bin", "4k/63.bin", "1m/0.bin"):
            out = subprocess.run(in_ns(args, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                              "--max-time", "10", f"{s.base}/{path}"]),
                                 capture_output=True, text=True).stdout.split()
            size = os.path.getsize(os.path.join(root, path))
            if out != ["200", str(size)]:
                raise SystemExit(f"{s.label} at {s.base}/{path} from {NS}: {out or 'no answer'}, expected 200 {size}")


# ------------------------------------------------------------------ tables

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cell(xs, fmt="{:.0f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    return f"{fmt.format(med(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def col(runs, key):
    return [r[key] for r in runs]


# ------------------------------------------------------------------ 1. throughput

THROUGHPUT_CASES = [
    ("4 KiB × 64 (named)", None, "/4k/"),
    ("page 4 KiB (constant)", "/page.html", None),
    ("1 MiB × 64 (named)", None, "/1m/"),
]


def throughput(args, root, work, redone):
    servers = [NsServer("nikaia", args, root, work, "nikaia"),
               NsServer("nginx", args, root, work, "nginx sendfile on", sendfile=True),
               NsServer("nginx", args, root, work, "nginx sendfile off", sendfile=False)]
    res = {s.label: {c[0]: [] for c in THROUGHPUT_CASES} for s in servers}
    started = []
    try:
        for s in servers:
            s.start()
            started.append(s)
        check(args, servers, root)
        for rep in range(args.repeats):
            for name, path, prefix in THROUGHPUT_CASES:
                script = bench.lua_rotation(prefix) if prefix else None
                for s in order(servers, rep):
                    url = s.base + (path or "/")

                    def run(s=s, url=url):
                        wrk(args, s, url, 1, args.conns, script)  # warm-up
                        return wrk(args, s, url, args.seconds, args.conns, script)
                    r = guarded(args, run, redone, f"{name} {s.label}")
                    res[s.label][name].append(r)
                    log(f"{rep + 1}/{args.repeats} {name} {s.label}: {r['rps']:.0f} req/s, "
                        f"{r['machine_us']:.1f} µs/req machine, others {r['other_cpu_pct']:.0f}%, "
                        f"steal {r['steal_pct']:.0f}%")
    finally:
        for s in started:
            s.stop()

    lines = ["### Throughput: nikaia vs nginx (sendfile on and off), one worker each, clients in the namespace", "",
             f"wrk -t1 -c{args.conns}, {args.seconds} s per run after a 1 s warm-up; median (min–max) of "
             f"{args.repeats} rounds. Server CPU: the server's processes (/proc/PID/stat; nginx: master and "
             "worker). Machine CPU: every CPU's non-idle time (/proc/stat), clients and softirq included.", "",
             "| case | server | requests/s | MiB/s | server CPU µs/req | machine CPU µs/req | "
             "server CPU busy % | client CPU busy % |",
             "|---|---|---|---|---|---|---|---|"]
    for name, *_ in THROUGHPUT_CASES:
        for s in servers:
            r = res[s.label][name]
            lines.append(f"| {name} | {s.label} | {cell(col(r, 'rps'))} | {cell(col(r, 'mibs'), '{:.1f}')} | "
                         f"{cell(col(r, 'server_us'), '{:.1f}')} | {cell(col(r, 'machine_us'), '{:.1f}')} | "
                         f"{cell(col(r, 'server_cpus_busy_pct'))} | {cell(col(r, 'client_cpus_busy_pct'))} |")
    lines += ["", "nikaia over nginx's better configuration of the same round (the one with less machine CPU "
              "per request), per round, then the median (min–max) of those ratios; requests/s above 1 and "
              "CPU below 1 favour nikaia:", "",
              "| case | nginx's better (rounds: on / off) | requests/s | server CPU/req | machine CPU/req |",
              "|---|---|---|---|---|"]
    ratios = {}
    for name, *_ in THROUGHPUT_CASES:
        n = res["nikaia"][name]
        on, off = res["nginx sendfile on"][name], res["nginx sendfile off"][name]
        best = [a if a["machine_us"] <= b["machine_us"] else b for a, b in zip(on, off)]
        wins_on = sum(1 for a, b in zip(on, off) if a["machine_us"] <= b["machine_us"])
        rr = {k: [x[k] / y[k] for x, y in zip(n, best)] for k in ("rps", "server_us", "machine_us")}
        ratios[name] = dict(rr, nginx_sendfile_on_rounds=wins_on, rounds=len(best))
        lines.append(f"| {name} | {wins_on} / {len(best) - wins_on} | {cell(rr['rps'], '{:.2f}')} | "
                     f"{cell(rr['server_us'], '{:.2f}')} | {cell(rr['machine_us'], '{:.2f}')} |")
    lines += ["", "p50 / p99 µs (medians): " + "; ".join(
        f"{name}: " + ", ".join(f"{s.label} {med(col(res[s.label][name], 'p50_us')):.0f} / "
                                f"{med(col(res[s.label][name], 'p99_us')):.0f}" for s in servers)
        for name, *_ in THROUGHPUT_CASES) + "."]
    lines += ["", others_line(args, [x for s in servers for r in res[s.label].values() for x in r], redone)]
    return "\n".join(lines), {"results": res, "ratios_vs_best_nginx": ratios}


def others_line(args, runs, redone):
    return (f"Others (CPU beyond the server, the clients and steal), % of a core: {cell(col(runs, 'other_cpu_pct'))}; "
            f"steal {cell(col(runs, 'steal_pct'))}. A run is redone (up to {args.retries} times) when others "
            f"exceed {args.max_other:.0f}% or steal {args.max_steal:.0f}%; redone so far in this run of the "
            f"script: {len(redone)}; wrk socket errors: {sum(x.get('socket_errors', 0) for x in runs)}.")


# ------------------------------------------------------------------ 2. fairness

def pullers(args, server, n=4):
    """n `curl` processes in the namespace, each fetching the 1 GiB file again
    and again on one kept-alive connection (curl's URL range `[1-1000000]`
    in a query the servers ignore). One long-lived process per puller, so
    its CPU is in /proc/PID/stat throughout a run, and the run can be
    guarded like the others."""
    nice = ["nice", "-n", str(args.pullers_nice)] if args.pullers_nice else []
    url = f"{server.base}/big.bin?pull=[1-1000000]"
    return [subprocess.Popen(in_ns(args, [*nice, "curl", "-s", url]), stdout=subprocess.DEVNULL,
                             start_new_session=True) for _ in range(n)]


def stop_group(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def fairness(args, root, work, redone):
    servers = [NsServer("nikaia", args, root, work, "nikaia"),
               NsServer("nginx", args, root, work, "nginx")]
    res = {s.label: {"quiet": [], "loaded": []} for s in servers}
    started = []
    try:
        for s in servers:
            s.start()
            started.append(s)
        check(args, servers, root)
        for rep in range(args.repeats):
            for s in order(servers, rep):
                url = s.base + "/page.html"

                def quiet(s=s, url=url):
                    wrk(args, s, url, 1, 4)
                    return wrk(args, s, url, args.seconds, 4)
                res[s.label]["quiet"].append(guarded(args, quiet, redone, f"fairness unloaded {s.label}"))

                def loaded(s=s, url=url):
                    pull = pullers(args, s)
                    try:
                        time.sleep(1)  # the pulls under way
                        return wrk(args, s, url, args.seconds, 4, background=[p.pid for p in pull])
                    finally:
                        stop_group(pull)
                r = guarded(args, loaded, redone, f"fairness loaded {s.label}")
                res[s.label]["loaded"].append(r)
                q = res[s.label]["quiet"][-1]
                log(f"{rep + 1}/{args.repeats} fairness {s.label}: p99 {q['p99_us']:.0f} → {r['p99_us']:.0f} µs, "
                    f"others {r['other_cpu_pct']:.0f}%")
    finally:
        for s in started:
            s.stop()
    n99 = col(res["nikaia"]["loaded"], "p99_us")
    g99 = col(res["nginx"]["loaded"], "p99_us")
    ratio = [a / b for a, b in zip(n99, g99)]
    lines = ["### Fairness: the 4 KiB page while four clients pull a 1 GiB file", "",
             f"wrk -t1 -c4 --latency on /page.html, {args.seconds} s per run; the pullers are four `curl` processes, each fetching "
             f"big.bin again and again on one connection, "
             f"in the namespace on the client CPU" + (f" at nice {args.pullers_nice}" if args.pullers_nice else "") +
             f". nginx: sendfile on (the bench's configuration). Median (min–max) of {args.repeats} rounds.", "",
             "| server | | p50 µs | p99 µs | requests/s | server's CPU % of a core | server CPU busy % | "
             "client CPU busy % | others % |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in servers:
        for k, what in (("quiet", "unloaded"), ("loaded", "4 × 1 GiB pulls")):
            r = res[s.label][k]
            lines.append(f"| {s.label} | {what} | {cell(col(r, 'p50_us'))} | {cell(col(r, 'p99_us'))} | "
                         f"{cell(col(r, 'rps'))} | {cell(col(r, 'server_cpu_pct'))} | "
                         f"{cell(col(r, 'server_cpus_busy_pct'))} | {cell(col(r, 'client_cpus_busy_pct'))} | "
                         f"{cell(col(r, 'other_cpu_pct'))} |")
    met = med(ratio) <= 1.0
    lines += ["", f"Loaded p99, nikaia / nginx, per round: {cell(ratio, '{:.2f}')} — target (at most nginx's): "
              f"{'met' if met else 'not met'} by the median.",
              "", "Server's CPU: its processes' time over the run; server/client CPU busy: the whole of that "
              "CPU, whoever ran on it. Others exclude the server, wrk and the pullers.",
              "", others_line(args, [x for s in servers for r in res[s.label].values() for x in r], redone)]
    return "\n".join(lines), {"results": res, "loaded_p99_ratio": ratio}


# ------------------------------------------------------------------ 3. slow clients

def slow_client_main(argv):
    """The slow readers (run in the namespace by the script: `netns.py
    --slow-clients-process HOST PORT PATH N RATE RCVBUF`). Each connection
    asks for PATH once and reads it at RATE bytes/s at most: after each
    recv it sleeps until its bytes are back on schedule, and the small
    SO_RCVBUF (set before connect, so the window is small from the start)
    makes the server's sends wait on the reader. Prints `ready N` once all
    have connected; SIGUSR1 restarts the byte count (the measured window),
    SIGTERM prints a JSON summary and ends."""
    host, port, path, n, rate, rcvbuf = argv[0], int(argv[1]), argv[2], int(argv[3]), float(argv[4]), int(argv[5])
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    stats = {"connected": 0, "errors": 0, "closed": 0, "not_200": 0, "bytes": 0}
    window = {"t0": time.time()}

    async def reader(i, started):
        loop = asyncio.get_running_loop()
        for attempt in range(5):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.setblocking(False)
            try:
                await asyncio.wait_for(loop.sock_connect(s, (host, port)), 10)
                await loop.sock_sendall(s, request)
                break
            except (OSError, asyncio.TimeoutError):
                s.close()
                await asyncio.sleep(0.2 * (attempt + 1))
        else:
            stats["errors"] += 1
            started.release()
            return
        stats["connected"] += 1
        started.release()
        t0, got, first = loop.time(), 0, True
        try:
            while True:
                data = await loop.sock_recv(s, 65536)
                if not data:
                    stats["closed"] += 1
                    return
                if first:
                    first = False
                    if not data.startswith(b"HTTP/1.1 200"):
                        stats["not_200"] += 1
                got += len(data)
                stats["bytes"] += len(data)
                ahead = got / rate - (loop.time() - t0)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        except OSError:
            stats["errors"] += 1
        finally:
            s.close()

    async def main():
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)

        def mark():
            stats["bytes"] = 0
            window["t0"] = time.time()
        loop.add_signal_handler(signal.SIGUSR1, mark)
        started = asyncio.Semaphore(0)
        # Connect in waves of 50 so the listen queues are not the test.
        tasks = []
        for i in range(n):
            tasks.append(asyncio.create_task(reader(i, started)))
            if i % 50 == 49:
                await asyncio.sleep(0.05)
        for _ in range(n):
            await started.acquire()
        print(f"ready {stats['connected']}", flush=True)
        await stop.wait()
        stats["seconds"] = time.time() - window["t0"]
        print(json.dumps(stats), flush=True)
        for t in tasks:
            t.cancel()

    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, max(n + 100, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
    asyncio.run(main())


def sockstat_tcp_mem_kib():
    """Kernel memory of TCP sockets (pages, /proc/net/sockstat), in KiB."""
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                p = line.split()
                return int(p[p.index("mem") + 1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    return 0


class Sampler(threading.Thread):
    """Samples the server's VmRSS and the kernel's TCP memory every 0.2 s."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.rss, self.tcp = server, [], []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.rss.append(self.server.memory()[0])
            self.tcp.append(sockstat_tcp_mem_kib())
            self.done.wait(0.2)


def slow_round(args, root, work, kind, label):
    """One round against a fresh server (its VmHWM is then this load's peak):
    the slow readers connect, then wrk measures the page while they read."""
    s = NsServer(kind, args, root, work, label)
    s.start()
    try:
        check(args, [s], root)
        idle_rss = s.memory()[0]
        tcp0 = sockstat_tcp_mem_kib()
        cmd = [sys.executable, os.path.abspath(__file__), "--slow-clients-process", s.host, str(s.port),
               "/big.bin", str(args.slow_clients), str(args.slow_rate), str(args.slow_rcvbuf)]
        client = subprocess.Popen(in_ns(args, cmd), stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            ready = client.stdout.readline().split()
            if not ready or ready[0] != "ready":
                raise SystemExit(f"slow clients did not start against {label}")
            time.sleep(2)  # every reader past its first window
            sampler = Sampler(s)
            sampler.start()
            client.send_signal(signal.SIGUSR1)  # the clients' byte count starts now
            r = wrk(args, s, s.base + "/page.html", args.slow_seconds, 4, background=[client.pid])
            sampler.done.set()
            sampler.join()
            rss, hwm = s.memory()
            client.send_signal(signal.SIGTERM)
            summary = json.loads(client.stdout.readline() or "{}")
        finally:
            stop_group([client])
    finally:
        s.stop()
    r.update(connected=int(ready[1]), idle_rss_kib=idle_rss, rss_max_kib=max(sampler.rss),
             rss_end_kib=rss, hwm_kib=hwm, tcp_mem_before_kib=tcp0, tcp_mem_max_kib=max(sampler.tcp),
             clients=summary, clients_mib_s=summary.get("bytes", 0) / summary.get("seconds", 1) / 2**20)
    return r


def slow(args, root, work, redone):
    labels = [("nikaia", "nikaia"), ("nginx", "nginx")]
    res = {label: [] for _, label in labels}
    for rep in range(args.repeats):
        for kind, label in order(labels, rep):
            r = guarded(args, lambda: slow_round(args, root, work, kind, label), redone, f"slow {label}")
            res[label].append(r)
            log(f"{rep + 1}/{args.repeats} slow {label}: {r['connected']} connected, "
                f"{r['clients_mib_s']:.0f} MiB/s, RSS {r['rss_max_kib'] / 1024:.1f} MiB, "
                f"p99 {r['p99_us']:.0f} µs, server CPU {r['server_cpu_pct']:.0f}%, others {r['other_cpu_pct']:.0f}%")
    per = args.slow_rate / 1000
    lines = [f"### {args.slow_clients} slow clients reading a 1 GiB file at {per:.0f} kB/s each", "",
             f"One asyncio process in the namespace on the client CPU, SO_RCVBUF {args.slow_rcvbuf} bytes, "
             f"throttled by reading (the server's sends wait on the window). Meanwhile wrk -t1 -c4 --latency on "
             f"/page.html for {args.slow_seconds} s. A fresh server per round (VmHWM: since its start). "
             "nginx: sendfile on; its RSS is the worker's. Kernel TCP memory: /proc/net/sockstat, all TCP "
             f"sockets of the machine. Median (min–max) of {args.repeats} rounds.", "",
             "| server | connected | clients MiB/s | RSS idle MiB | RSS max MiB | VmHWM MiB | kernel TCP MiB | "
             "server CPU % of a core | client CPU busy % | page p50 µs | page p99 µs | page requests/s | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    mib = lambda key: [x[key] / 1024 for x in runs]  # noqa: E731
    for _, label in labels:
        runs = res[label]
        errors = sum(x["clients"].get("errors", 0) + x["clients"].get("closed", 0) + x["clients"].get("not_200", 0)
                     for x in runs)
        lines.append(f"| {label} | {cell(col(runs, 'connected'))} | {cell(col(runs, 'clients_mib_s'))} | "
                     f"{cell(mib('idle_rss_kib'), '{:.1f}')} | {cell(mib('rss_max_kib'), '{:.1f}')} | "
                     f"{cell(mib('hwm_kib'), '{:.1f}')} | {cell(mib('tcp_mem_max_kib'), '{:.0f}')} | "
                     f"{cell(col(runs, 'server_cpu_pct'))} | {cell(col(runs, 'client_cpus_busy_pct'))} | "
                     f"{cell(col(runs, 'p50_us'))} | "
                     f"{cell(col(runs, 'p99_us'))} | {cell(col(runs, 'rps'))} | {errors} |")
    lines += ["", "Errors: connections refused, reset or closed early, or answered other than 200, over all rounds.",
              "", others_line(args, [x for r in res.values() for x in r], redone)]
    return "\n".join(lines), {"results": res}


# ------------------------------------------------------------------ 4. workers

def workers(args, root, work, redone):
    both = ",".join(str(c) for c in sorted(set(expand(args.server_cpus) + expand(args.client_cpus)))) \
        if args.server_cpus and args.client_cpus else None
    variants = [("nikaia", 1, args.server_cpus), ("nikaia", 2, args.server_cpus),
                ("nginx", 1, args.server_cpus), ("nginx", 2, args.server_cpus)]
    if both:
        variants += [("nikaia", 2, both), ("nginx", 2, both)]
    servers = [NsServer(kind, args, root, work, f"{kind} {w}w cpu {cpus or 'any'}", workers=w, cpus=cpus)
               for kind, w, cpus in variants]
    name, prefix = "4 KiB × 64 (named)", "/4k/"
    script = bench.lua_rotation(prefix)
    res = {s.label: [] for s in servers}
    started = []
    try:
        for s in servers:
            s.start()
            started.append(s)
        check(args, servers, root)
        for rep in range(args.repeats):
            for s in order(servers, rep):
                def run(s=s):
                    wrk(args, s, s.base + "/", 1, args.conns, script)
                    return wrk(args, s, s.base + "/", args.seconds, args.conns, script)
                r = guarded(args, run, redone, f"workers {s.label}")
                res[s.label].append(r)
                log(f"{rep + 1}/{args.repeats} workers {s.label}: {r['rps']:.0f} req/s, "
                    f"{r['ctxt_per_s']:.0f} cs/s, shares {'/'.join(f'{x:.0f}' for x in r['worker_shares'])}")
    finally:
        for s in started:
            s.stop()
    lines = [f"### Workers: 1 and 2, {name}, wrk -t1 -c{args.conns} from the namespace", "",
             f"The server on CPU {args.server_cpus} alone, or on CPUs {both} (then it shares the client's CPU, "
             f"as on loopback); wrk on CPU {args.client_cpus}. Context switches: the machine's (/proc/stat ctxt) "
             "and the server's own threads' (voluntary + involuntary, /proc/PID/task/*/status). Shares: each "
             "worker's part of the workers' CPU, busiest first (nikaia's worker threads, nginx's worker "
             f"processes). nginx: sendfile on, reuseport. Median (min–max) of {args.repeats} rounds.", "",
             "| server | requests/s | server CPU µs/req | machine CPU µs/req | context switches/s (machine) | "
             "(server) | shares % | server CPU busy % | client CPU busy % |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in servers:
        r = res[s.label]
        shares = [x["worker_shares"] for x in r if x["worker_shares"]]
        sh_cell = "/".join(f"{med([x[i] for x in shares]):.0f}" for i in range(min(map(len, shares)))) if shares else "—"
        lines.append(f"| {s.label} | {cell(col(r, 'rps'))} | {cell(col(r, 'server_us'), '{:.1f}')} | "
                     f"{cell(col(r, 'machine_us'), '{:.1f}')} | {cell(col(r, 'ctxt_per_s'))} | "
                     f"{cell(col(r, 'server_ctxt_per_s'))} | {sh_cell} | {cell(col(r, 'server_cpus_busy_pct'))} | "
                     f"{cell(col(r, 'client_cpus_busy_pct'))} |")
    lines += ["", "Two workers over one, per round (requests/s; machine CPU/req):", ""]
    ratios = {}
    for kind, w, cpus in variants:
        if w == 2:
            two = res[f"{kind} 2w cpu {cpus or 'any'}"]
            one = res[f"{kind} 1w cpu {args.server_cpus or 'any'}"]
            rr = [a["rps"] / b["rps"] for a, b in zip(two, one)]
            rm = [a["machine_us"] / b["machine_us"] for a, b in zip(two, one)]
            ratios[f"{kind} 2w cpu {cpus}"] = {"rps": rr, "machine_us": rm}
            lines.append(f"- {kind}, 2 workers on CPU {cpus} / 1 worker on CPU {args.server_cpus}: "
                         f"{cell(rr, '{:.2f}')}; {cell(rm, '{:.2f}')}")
    lines += ["", others_line(args, [x for r in res.values() for x in r], redone)]
    return "\n".join(lines), {"results": res, "ratios_2w_over_1w": ratios}


# ------------------------------------------------------------------ main

SECTIONS = {"throughput": throughput, "fairness": fairness, "slow": slow, "workers": workers}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--slow-clients-process":
        return slow_client_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nikaia", required=True, help="the nikaia binary (release)")
    ap.add_argument("--repeats", type=int, help="rounds (default 10; --quick 2)")
    ap.add_argument("--seconds", type=int, help="seconds per wrk run (default 5; --quick 2)")
    ap.add_argument("--conns", type=int, default=32, help="wrk connections, throughput and workers (default 32)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 2 rounds of 2 s, 5 s of slow clients")
    ap.add_argument("--only", choices=list(SECTIONS), action="append", help="sections to run (repeatable)")
    ap.add_argument("--rate", help="limit the download direction, in tc units (e.g. 1gbit)")
    ap.add_argument("--qdisc", choices=["tbf", "htb"], default="tbf", help="with --rate (default tbf)")
    ap.add_argument("--no-rps", dest="rps", action="store_false",
                    help="leave receive processing where veth puts it (the sending CPU)")
    ap.add_argument("--server-cpus", help="taskset list for the servers (default: the first CPU)")
    ap.add_argument("--client-cpus", help="taskset list for the clients (default: the last CPU)")
    ap.add_argument("--pullers-nice", type=int, default=19,
                    help="fairness: nice of the curl pullers, so wrk is not queued behind them on the "
                         "client CPU (default 19; 0 for normal priority)")
    ap.add_argument("--slow-clients", type=int, default=1000)
    ap.add_argument("--slow-rate", type=float, default=250e3, help="bytes/s per slow client (default 250000)")
    ap.add_argument("--slow-rcvbuf", type=int, default=32768, help="SO_RCVBUF of each slow client")
    ap.add_argument("--slow-seconds", type=int, help="measured seconds with the slow clients (default 10; --quick 5)")
    ap.add_argument("--max-other", type=float, default=20,
                    help="redo a run if others took more than this %% of a core (default 20)")
    ap.add_argument("--max-steal", type=float, default=15,
                    help="redo a run if the hypervisor stole more than this %% of a core (default 15)")
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--max-wait", type=float, default=120,
                    help="seconds to wait for a quiet second before a run, at most")
    ap.add_argument("--json")
    args = ap.parse_args()
    # --quick changes the defaults only; an explicit option still wins.
    for key, full, quick in (("repeats", 10, 2), ("seconds", 5, 2), ("slow_seconds", 10, 5)):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    if os.geteuid() != 0:
        raise SystemExit("needs root: ip netns, ip link, tc")
    for tool in ("ip", "tc", "wrk", "curl", "taskset"):
        if not shutil.which(tool):
            raise SystemExit(f"needs {tool}")
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        raise SystemExit("needs nginx")
    args.nikaia = os.path.abspath(args.nikaia)
    cpus = online_cpus()
    if len(cpus) < 2:
        print("One CPU online: no pinning (server and clients share it).", file=sys.stderr)
        args.server_cpus = args.client_cpus = None
    else:
        args.server_cpus = args.server_cpus or str(cpus[0])
        args.client_cpus = args.client_cpus or str(cpus[-1])
    args.workers = 1

    # Enough descriptors for 1000 connections in each of server and client.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))

    global PID_FILE
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "site")
    os.makedirs(work, exist_ok=True)
    bench.make_fixture(root)
    nswork = os.path.join(work, "netns")
    os.makedirs(nswork, exist_ok=True)
    PID_FILE = os.path.join(nswork, "servers.pids")
    kill_remembered()

    # SIGTERM (and SIGHUP) end the run through the same finally as Ctrl-C.
    def bye(sig, _frame):
        raise SystemExit(f"signal {sig}")
    signal.signal(signal.SIGTERM, bye)
    # Ctrl-C as KeyboardInterrupt even when started with SIGINT ignored
    # (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, bye)

    net = Net(args)
    everything, redone = {}, []
    try:
        net.setup()
        nginx_v = sh("/usr/sbin/nginx", "-v", check=False).stderr.strip()
        print(f"# benches/http/netns.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
        print(f"- Linux {os.uname().release}, {len(cpus)} CPUs online ({', '.join(map(str, cpus))}); "
              f"load average before: {bench.loadavg()}.")
        print(f"- nikaia: {bench.binary_id(args.nikaia)}; {nginx_v}.")
        print(f"- Servers on {SRV_ADDR} ({VETH_SRV}, root namespace) under `taskset -c {args.server_cpus}`; "
              f"clients (wrk, curl, the slow readers) in namespace `{NS}` at {CLI_ADDR} ({VETH_CLI}) under "
              f"`ip netns exec {NS} taskset -c {args.client_cpus}`.")
        print(f"- RPS: {'each side receives on its own CPU' if args.rps and args.server_cpus else 'off (kernel default)'}. "
              f"qdisc on {VETH_SRV}: {net.qdisc()}" + (f" (--rate {args.rate}, {args.qdisc})" if args.rate else
                                                     " (no rate limit)") + ".")
        print(f"- {args.repeats} rounds, {args.seconds} s per run, servers alternated round by round; "
              "median (min–max).\n")
        print(VETH_TEXT + "\n")
        everything["setup"] = {"kernel": os.uname().release, "qdisc": net.qdisc(), "server_cpus": args.server_cpus,
                               "client_cpus": args.client_cpus, "rps": args.rps, "rate": args.rate,
                               "repeats": args.repeats, "seconds": args.seconds, "nikaia": bench.binary_id(args.nikaia),
                               "nginx": nginx_v}
        for name in args.only or list(SECTIONS):
            log(f"section {name}")
            text, everything[name] = SECTIONS[name](args, root, nswork, redone)
            print(text + "\n", flush=True)
        everything["redone"] = redone
        print(f"Load average after: {bench.loadavg()}.")
    finally:
        net.teardown()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(everything, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted; the namespace, the veth pair and the servers are gone")
