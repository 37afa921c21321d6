#!/usr/bin/env python3
"""The wasm32 build of nikaia serve under Node beside npm's http-server 14
(the static server Node users pick), in the same run, interleaved.

Servers (each one process, one thread of JS): "wasm" (nikaia_std/wasm/host.cjs
with the module from target/wasm-pkg), "http-server" (`http-server ROOT -a
127.0.0.1 -p PORT -s -c-1`: no request log, caching headers off), and,
when asked, "wasm-before" (another host.cjs and module: --before-host,
--before-pkg) and "linux" (nikaia serve, one worker: --nikaia).

Cases: 4 KiB × 64 and 1 MiB × 64 named files (wrk -t1 -c--conns, keep-alive,
a Lua rotation over the 64 names), the fixture of bench.py. Each run is
guarded as in bench.py (redone while other processes took more than
--max-other % of a core); within a round every server runs each case once,
and the order of the servers rotates from round to round. Reported: requests/s,
server CPU per request (utime+stime of the server process, all its
threads) and machine CPU per request (non-idle jiffies of /proc/stat, wrk
included), medians of --repeats rounds with min–max, and ratios of every
server over http-server (and wasm over wasm-before).

Before measuring, curl checks once that the wasm build answers as the Linux
one would (when --nikaia is given) or as wasm-before, and that every server's
bodies equal the files on disk.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import cell, med  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(TOP, "target")

CASES = [
    ("4 KiB × 64 (named)", None, "/4k/"),
    ("1 MiB × 64 (named)", None, "/1m/"),
]
BODY_FILES = ["4k/0.bin", "4k/63.bin", "1m/0.bin", "1m/63.bin"]


class Proc:
    """A server process: its command, environment, port; the interface
    bench.measure_wrk and bench.guarded_pair use (label, pid, base)."""

    def __init__(self, label, cmd, env=None):
        self.label, self.cmd, self.env = label, cmd, env
        self.port = bench.free_port()
        self.proc = None

    def start(self):
        cmd = [c.format(port=self.port) for c in self.cmd]
        env = dict(os.environ, **(self.env or {}))
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"{self.label} did not start: {cmd}")
        self.pid = self.proc.pid

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"


def bodies_match(server, root):
    bad = []
    for name in BODY_FILES:
        got = subprocess.run(["curl", "-sS", "--fail", f"{server.base}/{name}"], capture_output=True).stdout
        with open(os.path.join(root, name), "rb") as f:
            if got != f.read():
                bad.append(name)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-server", default=os.path.join(TARGET, "npm", "node_modules", "http-server", "bin",
                                                          "http-server"),
                    help="http-server's bin script (npm install --prefix target/npm http-server@14)")
    ap.add_argument("--host", default=os.path.join(TOP, "nikaia_std", "wasm", "host.cjs"))
    ap.add_argument("--pkg", default=os.path.join(TARGET, "wasm-pkg", "nikaia_wasm.js"))
    ap.add_argument("--before-host", help="a second host.cjs, labelled wasm-before")
    ap.add_argument("--before-pkg", help="the module --before-host loads (its nikaia_wasm.js)")
    ap.add_argument("--nikaia", help="a nikaia binary: nikaia serve, one worker, labelled linux")
    ap.add_argument("--host-env", action="append", default=[], metavar="K=V",
                    help="environment for the wasm host (repeatable)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--max-other", type=float, default=20)
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--max-wait", type=float, default=60)
    ap.add_argument("--case", action="append", metavar="TEXT", help="only the cases whose name contains TEXT")
    ap.add_argument("--json")
    args = ap.parse_args()
    for key in ("http_server", "host", "pkg", "before_host", "before_pkg", "nikaia"):
        if getattr(args, key):
            setattr(args, key, os.path.abspath(getattr(args, key)))

    work = os.path.join(TARGET, "bench-http")
    root = os.path.join(work, "site")
    os.makedirs(work, exist_ok=True)
    bench.make_fixture(root)
    cases = [c for c in CASES if not args.case or any(t in c[0] for t in args.case)]

    node = shutil.which("node") or "node"
    host_env = dict(kv.split("=", 1) for kv in args.host_env)
    servers = [Proc("wasm", [node, args.host, root, "127.0.0.1:{port}"], dict(host_env, NIKAIA_WASM_PKG=args.pkg)),
               Proc("http-server", [node, args.http_server, root, "-a", "127.0.0.1", "-p", "{port}", "-s", "-c-1"])]
    if args.before_host:
        servers.append(Proc("wasm-before", [node, args.before_host, root, "127.0.0.1:{port}"],
                            {"NIKAIA_WASM_PKG": args.before_pkg or args.pkg}))
    linux = None
    if args.nikaia:
        rt = os.path.join(work, "runtime-wasm-linux.toml")
        linux = Proc("linux", [args.nikaia, "serve", root, "--runtime", rt])
        with open(rt, "w") as f:
            f.write(f'listen = "127.0.0.1:{linux.port}"\nworkers = 1\naccess-log = "off"\n')
        servers.append(linux)

    hs_version = subprocess.run([node, args.http_server, "-v"], capture_output=True, text=True).stdout.strip()
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# benches/http/wasm.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"Machine: {os.cpu_count()} CPUs ({cpu}), Linux {os.uname().release}. Load average before: "
          f"{bench.loadavg()}. wrk -t1 -c{args.conns}, {args.seconds} s per run (after 1 s of warm-up), "
          f"{args.repeats} rounds, the servers' order rotating; median (min–max).\n")
    print("### Servers\n")
    pkg_wasm = args.pkg.replace("nikaia_wasm.js", "nikaia_wasm_bg.wasm")
    print(f"- wasm: node {node_version} {args.host}" + (f" (env {host_env})" if host_env else "") +
          f" with {bench.binary_id(pkg_wasm)}")
    print(f"- http-server: {hs_version} ({args.http_server}) under node {node_version}, "
          "`-a 127.0.0.1 -p PORT -s -c-1` (silent, caching headers off), one process")
    if args.before_host:
        before_pkg = (args.before_pkg or args.pkg).replace("nikaia_wasm.js", "nikaia_wasm_bg.wasm")
        print(f"- wasm-before: node {node_version} {args.before_host} with {bench.binary_id(before_pkg)}")
    if linux:
        print(f"- linux: {bench.binary_id(args.nikaia)}, `nikaia serve`, workers = 1, access-log off")
    print()

    for s in servers:
        s.start()
    checks = {}
    try:
        for s in servers:
            checks[s.label] = bodies_match(s, root)
        other = linux or next((s for s in servers if s.label == "wasm-before"), None)
        same = None
        if other:
            ok, rows = bench.same_answers(servers[0], other, root)
            same = {"ok": ok, "rows": rows}
            print("\n".join(bench.same_answers_lines(servers[0], other, ok, rows)) + "\n")
        print("Bodies against the files on disk (" + ", ".join(BODY_FILES) + "): " + "; ".join(
            f"{label} {'identical' if not bad else 'DIFFER: ' + ', '.join(bad)}" for label, bad in checks.items())
            + ".\n")
        if any(checks.values()) or (same and not same["ok"]):
            raise SystemExit("a server answered differently")
        results = {s.label: {c[0]: [] for c in cases} for s in servers}
        redone = []
        for rep in range(args.repeats):
            k = rep % len(servers)
            order = servers[k:] + servers[:k]
            for name, path, prefix in cases:
                for s in order:
                    def run(s=s, url=s.base + (path or "/"), script=bench.lua_rotation(prefix) if prefix else None):
                        bench.measure_wrk(s, url, 1, args.conns, script)  # warm-up
                        return bench.measure_wrk(s, url, args.seconds, args.conns, script)
                    r = bench.guarded(args, run, redone)
                    results[s.label][name].append(r)
                    print(f"[{time.strftime('%H:%M:%S')}] {rep + 1}/{args.repeats} {name} {s.label}: "
                          f"{r['rps']:.0f} req/s, server {r['server_us']:.1f} µs, machine {r['machine_us']:.1f} µs, "
                          f"others {r['other_cpu_pct']:.0f}%, load {bench.loadavg()}", file=sys.stderr, flush=True)
    finally:
        for s in servers:
            s.stop()

    lines = ["### Requests/s and CPU per request", "",
             "| case | server | requests/s | MiB/s | server CPU µs/req | machine CPU µs/req | p50 / p99 µs |",
             "|---|---|---|---|---|---|---|"]
    for name, *_ in cases:
        for s in servers:
            r = results[s.label][name]
            lines.append(f"| {name} | {s.label} | {cell([x['rps'] for x in r])} | "
                         f"{cell([x['mibs'] for x in r], '{:.1f}')} | "
                         f"{cell([x['server_us'] for x in r], '{:.1f}')} | "
                         f"{cell([x['machine_us'] for x in r], '{:.1f}')} | "
                         f"{med([x['p50_us'] for x in r]):.0f} / {med([x['p99_us'] for x in r]):.0f} |")
    pairs = [(s.label, "http-server") for s in servers if s.label != "http-server"]
    if args.before_host:
        pairs.append(("wasm", "wasm-before"))
    lines += ["", "Ratios (of the medians; requests/s above 1.0 and CPU below 1.0 favour the first), and in "
              "brackets the range of the per-round ratios (each round's runs were back to back):", "",
              "| case | ratio | requests/s | server CPU/req | machine CPU/req |", "|---|---|---|---|---|"]
    for name, *_ in cases:
        for a, b in pairs:
            ra, rb = results[a][name], results[b][name]

            def ratio(key):
                per_round = [x[key] / y[key] for x, y in zip(ra, rb)]
                return (f"{med([x[key] for x in ra]) / med([x[key] for x in rb]):.2f} "
                        f"({min(per_round):.2f}–{max(per_round):.2f})")
            lines.append(f"| {name} | {a}/{b} | {ratio('rps')} | {ratio('server_us')} | {ratio('machine_us')} |")
    others = [x["other_cpu_pct"] for s in servers for r in results[s.label].values() for x in r]
    lines += ["", "wrk socket errors over all measured runs: " + ", ".join(
        f"{s.label} {sum(x['socket_errors'] for r in results[s.label].values() for x in r)}" for s in servers) + ".",
        "", f"CPU outside the server and wrk during measured runs, % of one core: {cell(others)}; "
        f"{len(redone)} runs redone (others above {args.max_other:.0f}%).", "",
        f"Load average after: {bench.loadavg()}."]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"servers": [s.label for s in servers], "checks": checks, "same_answers": same,
                       "results": results, "redone_other_cpu_pct": redone}, f, indent=1)


if __name__ == "__main__":
    main()
