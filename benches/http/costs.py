#!/usr/bin/env python3
"""What each step of a kept answer costs the server, in ns per request.

Starts `nikaia serve` (workers = 1, access log off) over the bench fixture,
loads one case with `wrk -t1 -c32`, and meanwhile samples the server with
`perf record --call-graph dwarf` (cpu-clock, so it works on a VM without
hardware counters). Each step's share is the inclusive share of the samples
in the function that does it (`perf report --children`); the step's ns per
request is that share of the server's CPU per request over the same run
(utime+stime from /proc/PID/stat, taken in an unsampled run just before:
sampling with call graphs makes the server slower). Steps nest (the answer contains the kept
table's lookup), so the table gives each step's own part: a step's share
less the steps inside it. Sampling is statistical: read the small rows as
"about", and run it a few times (--runs).

Needs the release build's symbols (Cargo.toml's [profile.release] debug = 1)
and perf (apt-get install linux-perf).

usage: benches/http/costs.py --nikaia BIN [--case page|4k] [--seconds 5] [--runs 3]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

# (step, the function whose inclusive share it is, the steps inside it)
STEPS = [
    ("wait: epoll_pwait (shared by the turn)", r"__x64_sys_epoll_pwait$", []),
    ("read: the request's bytes (read)", r"nikaia_std::linux::transport::Transport::read$", []),
    ("parse the head (httparse, checks, path decode)", r"nikaia_std::http::h1::parse::parse_head$", []),
    ("route and run the handler (dir_handler)", r"nikaia_std::http::app::Server::method::\{\{closure\}\}$", []),
    ("kept table: lock, find, statx once per turn", r"nikaia_std::linux::cache::Cache<M>::lookup$", ["statx"]),
    ("statx of the name (shared by the turn's hits)", r"nikaia_std::fs::root::Root::stat$", []),
    ("decide status and fields (head::build)", r"nikaia_std::http::file::head::build$", []),
    ("the rest of the answer pipeline", r"nikaia_std::http::answer::answer$",
     ["route and run", "kept table", "decide status"]),
    ("write the head (h1 write_head)", r"nikaia_std::http::h1::head::write_head$", []),
    ("send head and body (sendmsg)", r"<nikaia_std::linux::transport::Transport as nikaia_std::linux::out::Wire>::send$", []),
]


def inclusive(report_text):
    """symbol -> inclusive % from `perf report --children --stdio -g none`."""
    out = {}
    for line in report_text.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\[[.k]\]\s+(.*?)\s*(?:-\s+-\s*)?$", line)
        if m:
            sym = m.group(3).strip().removesuffix("(inlined)").strip()
            out[sym] = max(out.get(sym, 0.0), float(m.group(1)))
    return out


def share(incl, pattern):
    rx = re.compile(pattern)
    return max((v for k, v in incl.items() if rx.search(k)), default=0.0)


def one_run(args, server, url, script):
    """The server's CPU per request from a run without perf (sampling with
    call graphs costs the server more than the answer does), then the
    shares from a sampled run right after it."""
    server_ns = bench.measure(server, url, args.seconds, 32, script)["server_us"] * 1000
    data = tempfile.NamedTemporaryFile(suffix=".perf", delete=False).name
    wrk = ["wrk", "-t1", "-c32", f"-d{args.seconds}s"] + (["-s", script] if script else []) + [url]
    subprocess.run(["perf", "record", "-q", "-F", "999", "--call-graph", "dwarf,8192", "-p", str(server.pid),
                    "-o", data, "--"] + wrk, capture_output=True, text=True, check=True)
    rep = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "symbol", "--stdio", "-g", "none"],
                         capture_output=True, text=True).stdout
    os.unlink(data)
    incl = inclusive(rep)
    return server_ns, {name: share(incl, pat) for name, pat, _ in STEPS}


def main():
    if not shutil.which("perf"):
        raise SystemExit("needs perf")
    ap = argparse.ArgumentParser()
    ap.add_argument("--nikaia", required=True)
    ap.add_argument("--case", choices=["page", "4k"], default="page")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    args.workers = 1
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "site")
    bench.make_fixture(root)
    server = bench.Server("nikaia", args, root, work)
    server.start()
    path, script = ("/page.html", None) if args.case == "page" else ("/", bench.lua_rotation("/4k/"))
    try:
        bench.measure(server, server.base + path, 1, 32, script)  # warm: the kept table
        runs = [one_run(args, server, server.base + path, script) for _ in range(args.runs)]
    finally:
        server.stop()
    med = bench.med
    server_ns = med([r[0] for r in runs])
    own = {}
    for name, _, inside in STEPS:
        vals = []
        for _, shares in runs:
            v = shares[name] - sum(shares[n] for n in shares if any(n.startswith(i) for i in inside))
            vals.append(max(v, 0.0))
        own[name] = med(vals)
    case = "page 4 KiB (constant)" if args.case == "page" else "4 KiB × 64 (named)"
    print(f"Per-request cost of a kept answer, {case}, `wrk -t1 -c32`, {args.runs} runs of "
          f"{args.seconds} s, median; server CPU {server_ns:.0f} ns per request "
          f"({', '.join(f'{r[0]:.0f}' for r in runs)}):\n")
    print("| step | share of the server's CPU | ns per request |")
    print("|---|---|---|")
    accounted = 0.0
    for name, _, _ in STEPS:
        accounted += own[name]
        print(f"| {name} | {own[name]:.1f}% | {own[name] * server_ns / 100:.0f} |")
    rest = max(100.0 - accounted, 0.0)
    print(f"| everything else (the loop, the connection's state, kernel work outside these calls) | "
          f"{rest:.1f}% | {rest * server_ns / 100:.0f} |")


if __name__ == "__main__":
    main()
