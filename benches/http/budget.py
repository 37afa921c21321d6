#!/usr/bin/env python3
"""The per-request budget: nikaia serve beside nginx's best configuration for
each case and beside the floor (benches/http/floor.c), one worker each, on
loopback, rounds interleaved.

Each round measures every case on every server, in an order that alternates
round by round, with `wrk -t1 -c32` (one warm-up second, then --seconds).
nginx runs twice, with `sendfile on` (the bench's usual configuration) and with
`sendfile off`; for each case, "nginx best" is whichever of the two spent
less machine CPU per request (median over the rounds), and each round's
ratios are nikaia's over that configuration in the same round. The floor answers every request with one prebuilt response of the
case's body size (no file at all) and one writev: what the socket work alone
costs. The report gives, per case, the median and range over the rounds of
each server's figures and of the per-round ratios.

Machine CPU per request is /proc/stat (all CPUs, wrk and softirq included);
server CPU is the server process's utime+stime. A run during which something
else took more than --max-other % of a core is redone (bench.guarded).

usage: benches/http/budget.py --nikaia BIN [--repeats 10] [--seconds 4]
       [--case TEXT] [--quick] [--json FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

CASES = [
    # (name, path or None, rotation prefix or None, body bytes for the floor:
    # none at 1 MiB, where a socket buffer does not hold a whole answer and
    # the floor's blocking write would measure its own waiting)
    ("page 4 KiB (constant)", "/page.html", None, 4096),
    ("4 KiB × 64 (named)", None, "/4k/", 4 << 10),
    ("64 KiB × 64 (named)", None, "/64k/", 64 << 10),
    ("1 MiB × 64 (named)", None, "/1m/", None),
]


class NginxNoSendfile(bench.Server):
    """nginx as the bench configures it, but with `sendfile off` (it then
    reads into its output buffers and writes them)."""

    def nginx_conf(self):
        return super().nginx_conf().replace("sendfile on;", "sendfile off;")


class Floor(bench.Server):
    """benches/http/floor.c, one process per body size."""

    def __init__(self, args, root, work, body, binary):
        super().__init__("floor", args, root, work)
        self.body, self.floor_binary = body, binary

    def start(self):
        self.proc = subprocess.Popen([self.floor_binary, str(self.port), str(self.body)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                bench.socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("the floor did not start")
        self.pid = self.proc.pid

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def build_floor(work):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise SystemExit("the floor needs a C compiler (apt-get install gcc)")
    out = os.path.join(work, "floor")
    subprocess.run([cc, "-O2", "-o", out, os.path.join(HERE, "floor.c")], check=True)
    return out


def run(args):
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "site")
    os.makedirs(work, exist_ok=True)
    bench.make_fixture(root)
    floor_bin = build_floor(work)
    cases = [c for c in CASES if not args.case or any(t in c[0] for t in args.case)]
    nikaia = bench.Server("nikaia", args, root, os.path.join(work, "nikaia"))
    on = bench.Server("nginx", args, root, os.path.join(work, "nginx-on"))
    off = NginxNoSendfile("nginx", args, root, os.path.join(work, "nginx-off"))
    nikaia.label, on.label, off.label = "nikaia", "nginx sendfile on", "nginx sendfile off"
    floors = {c[0]: Floor(args, root, work, c[3], floor_bin) for c in cases if c[3]}
    for name, f in floors.items():
        f.label = "floor"
    servers = [nikaia, on, off]
    for s in servers:
        os.makedirs(s.workdir, exist_ok=True)
    results = {c[0]: {s: [] for s in ("nikaia", "nginx sendfile on", "nginx sendfile off")
                      + (("floor",) if c[3] else ())}
               for c in cases}
    redone = []
    started = time.time()
    for s in servers + list(floors.values()):
        s.start()
    try:
        for rep in range(args.repeats):
            for name, path, prefix, _ in cases:
                order = servers + ([floors[name]] if name in floors else [])
                for s in (order if rep % 2 == 0 else order[::-1]):
                    script = bench.lua_rotation(prefix) if prefix else None
                    url = s.base + (path or "/")

                    def one(s=s, url=url, script=script):
                        bench.measure_wrk(s, url, 1, args.conns, script)  # warm-up
                        return bench.measure_wrk(s, url, args.seconds, args.conns, script)
                    r = bench.guarded(args, one, redone)
                    results[name][s.label].append(r)
                    print(f"[{time.strftime('%H:%M:%S')}] {rep + 1}/{args.repeats} {name} {s.label}: "
                          f"{r['rps']:.0f} req/s, machine {r['machine_us']:.1f} µs, server {r['server_us']:.1f} µs, "
                          f"others {r['other_cpu_pct']:.0f}%", file=sys.stderr, flush=True)
    finally:
        for s in servers + list(floors.values()):
            s.stop()
    return cases, results, redone, time.time() - started


def ratios(results, name, key):
    """Per round: nikaia's `key` over nginx's best configuration for the case,
    and the floor's over the same. The best configuration is the one with the
    lower median machine CPU per request over all rounds: taking the better of
    the two in each round would pick the luckier of two noisy samples and
    favour nginx."""
    r = results[name]
    med = lambda label: bench.med([x["machine_us"] for x in r[label]])
    best = "nginx sendfile on" if med("nginx sendfile on") <= med("nginx sendfile off") else "nginx sendfile off"
    out = {"nikaia": [], "floor": [], "best": best}
    for i in range(len(r["nikaia"])):
        out["nikaia"].append(r["nikaia"][i][key] / r[best][i][key])
        if "floor" in r:
            out["floor"].append(r["floor"][i][key] / r[best][i][key])
    return out


def report(args, cases, results, redone, wall):
    cell = bench.cell
    lines = [f"# benches/http/budget.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"nikaia: {bench.binary_id(args.nikaia)}, `nikaia serve`, workers = 1, access log off. nginx "
             f"{nginx_version()}, one worker, the bench's configuration with `sendfile on` and again with "
             "`sendfile off`. The floor: benches/http/floor.c. Loopback, `wrk -t1 "
             f"-c{args.conns}`, {args.repeats} rounds of {args.seconds} s runs, the order alternating by round; "
             f"{len(redone)} runs redone because others took more than {args.max_other:.0f}% of a core; "
             f"{wall / 60:.0f} min in all.", "",
             "| case | server | requests/s | server CPU µs/req | machine CPU µs/req |", "|---|---|---|---|---|"]
    for name, *_ in cases:
        for label, r in results[name].items():
            lines.append(f"| {name} | {label} | {cell([x['rps'] for x in r])} | "
                         f"{cell([x['server_us'] for x in r], '{:.1f}')} | "
                         f"{cell([x['machine_us'] for x in r], '{:.1f}')} |")
    lines += ["", "Per-round ratios over nginx's best configuration for the case (the one with the lower "
              "median machine CPU per request over the rounds), median (range):", "",
              "| case | nikaia machine | nikaia server | floor machine | floor server | nginx best was |",
              "|---|---|---|---|---|---|"]
    for name, *_ in cases:
        m, s = ratios(results, name, "machine_us"), ratios(results, name, "server_us")
        fm = cell(m["floor"], "{:.2f}") if m["floor"] else "—"
        fs = cell(s["floor"], "{:.2f}") if s["floor"] else "—"
        lines.append(f"| {name} | {cell(m['nikaia'], '{:.2f}')} | {cell(s['nikaia'], '{:.2f}')} | "
                     f"{fm} | {fs} | "
                     f"{m['best'].removeprefix('nginx ')} |")
    return "\n".join(lines)


def nginx_version():
    out = subprocess.run([shutil.which("nginx") or "/usr/sbin/nginx", "-v"], capture_output=True, text=True)
    return (out.stderr or out.stdout).strip().split("/")[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nikaia", required=True)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--case", action="append", metavar="TEXT")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 1 s: a smoke run")
    ap.add_argument("--max-other", type=float, default=60)
    ap.add_argument("--max-wait", type=float, default=120)
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--report", metavar="JSON", help="print the report of an earlier run's --json")
    args = ap.parse_args()
    args.workers = 1
    if args.quick:
        args.repeats, args.seconds = 2, 1
    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        cases = [c for c in CASES if c[0] in saved["results"]]
        print(report(args, cases, saved["results"], saved["redone"], saved.get("wall", 0)))
        return
    cases, results, redone, wall = run(args)
    print(report(args, cases, results, redone, wall))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "redone": redone, "wall": wall}, f, indent=1)


if __name__ == "__main__":
    main()
