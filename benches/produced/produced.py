#!/usr/bin/env python3
"""Produced bodies over HTTP/1.1 and h2c: how long a body of small pieces
takes, the machine's CPU for it, and how many chunks or DATA frames carry
it — for one or more builds of `examples/pieces.rs` side by side in one
run (`README.md` says how to build an older one).

    python3 benches/produced/produced.py --server new=target/release/examples/pieces \
        [--server old=/path/to/old/pieces] [--rounds 7]

Each round runs every (build, protocol, body) once, in an order rotated
by one each round; the report gives medians with min-max, and each
build's ratio of HTTP/1.1 to h2c within the same round.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BODIES = {
    # name: (path, bytes)
    "squares.csv": ("/squares.csv", None),
    "16 B x 1M": ("/pieces/16/1048576", 16 << 20),
    "1 KiB x 16K": ("/pieces/1024/16384", 16 << 20),
    "64 KiB x 1K": ("/pieces/65536/1024", 64 << 20),
}
PROTOCOLS = ["http/1.1", "h2c"]


def machine_busy():
    """Non-idle jiffies of the whole machine (/proc/stat's cpu line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    return user + nice + system + irq + softirq


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, port, workdir):
    runtime = os.path.join(workdir, f"rt-{port}.toml")
    with open(runtime, "w") as f:
        f.write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\n')
    proc = subprocess.Popen([binary, "--runtime", runtime], stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"{binary} did not start on {port}")


def fetch(url, protocol):
    """Seconds and machine CPU seconds for one fetch; the body's size."""
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{size_download}", url]
    if protocol == "h2c":
        args.insert(1, "--http2-prior-knowledge")
    hz = os.sysconf("SC_CLK_TCK")
    busy, t0 = machine_busy(), time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return wall, (machine_busy() - busy) / hz, int(out.stdout)


def carriers(url, protocol):
    """How many chunks (HTTP/1.1) or DATA frames (h2c) carried the body."""
    if protocol == "h2c":
        out = subprocess.run(["nghttp", "-nv", url], check=True, capture_output=True, text=True)
        return sum(1 for line in out.stdout.splitlines() if "recv DATA frame" in line)
    raw = subprocess.run(["curl", "-sS", "--raw", url], check=True, capture_output=True).stdout
    at, chunks = 0, 0
    while True:
        end = raw.index(b"\r\n", at)
        size = int(raw[at:end].split(b";")[0], 16)
        if size == 0:
            return chunks
        chunks += 1
        at = end + 2 + size + 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", action="append", required=True, help="NAME=BINARY")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--body", action="append", choices=list(BODIES), help="default: all")
    args = ap.parse_args()
    bodies = args.body or list(BODIES)
    workdir = tempfile.mkdtemp(prefix="produced-bench-")
    servers = {}
    for spec in args.server:
        name, binary = spec.split("=", 1)
        port = free_port()
        servers[name] = (start(binary, port, workdir), port)
    try:
        cells = [(s, p, b) for s in servers for p in PROTOCOLS for b in bodies]
        # Once, outside the timing: the carriers, and a warm-up.
        counts = {}
        for s, p, b in cells:
            url = f"http://127.0.0.1:{servers[s][1]}{BODIES[b][0]}"
            counts[(s, p, b)] = carriers(url, p)
            fetch(url, p)
        runs = {c: [] for c in cells}
        for r in range(args.rounds):
            order = cells[r % len(cells):] + cells[: r % len(cells)]
            for s, p, b in order:
                url = f"http://127.0.0.1:{servers[s][1]}{BODIES[b][0]}"
                wall, cpu, size = fetch(url, p)
                expect = BODIES[b][1]
                assert expect is None or size == expect, (s, p, b, size)
                runs[(s, p, b)].append((wall, cpu, size))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()

    def spread(xs, fmt):
        return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}–{fmt(max(xs))})"

    ms = lambda x: f"{x * 1000:.0f}"  # noqa: E731
    print(f"rounds: {args.rounds}; one worker; curl on loopback; medians (min–max)\n")
    print("| build | body | protocol | wall ms | machine CPU ms | chunks or DATA frames |")
    print("|---|---|---|---|---|---|")
    for s, p, b in cells:
        walls = [w for w, _, _ in runs[(s, p, b)]]
        cpus = [c for _, c, _ in runs[(s, p, b)]]
        print(f"| {s} | {b} | {p} | {spread(walls, ms)} | {spread(cpus, ms)} | {counts[(s, p, b)]} |")
    print("\n| build | body | HTTP/1.1 ÷ h2c wall, same round |")
    print("|---|---|---|")
    for s in servers:
        for b in bodies:
            h1 = [w for w, _, _ in runs[(s, "http/1.1", b)]]
            h2 = [w for w, _, _ in runs[(s, "h2c", b)]]
            ratios = [a / c for a, c in zip(h1, h2)]
            print(f"| {s} | {b} | {spread(ratios, lambda x: f'{x:.2f}')} |")
    if len(servers) > 1:
        names = list(servers)
        base = names[-1]
        print(f"\n| body | protocol | wall ÷ {base}'s, same round |")
        print("|---|---|---|")
        for s in names[:-1]:
            for p in PROTOCOLS:
                for b in bodies:
                    new = [w for w, _, _ in runs[(s, p, b)]]
                    old = [w for w, _, _ in runs[(base, p, b)]]
                    ratios = [a / c for a, c in zip(new, old)]
                    print(f"| {b} | {p} ({s}) | {spread(ratios, lambda x: f'{x:.2f}')} |")


if __name__ == "__main__":
    main()
