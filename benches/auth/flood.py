#!/usr/bin/env python3
"""Does a flood of wrong passwords slow the rest of the site?

Starts `nikaia serve` (one worker, access log off) with an `[[auth]]` rule
on `staging/**` (bcrypt at --cost), then loads a public 4 KiB file with
`wrk --latency` for --seconds, alone and then while --flooders connections
send wrong passwords for a protected name as fast as they are answered.
Then the same flood for a missing public name (no check at all), as a
control: the flooding client shares the machine, so some slowdown is the
load itself. Alternates the three --rounds times and prints, for each, the public
requests/s and latency percentiles (medians over the rounds, with their
range), and what the flood got (401, 503).

usage: benches/auth/flood.py [--binary target/release/nikaia] [--cost 10]
       [--flooders 64] [--seconds 10] [--rounds 3]
"""

import argparse
import base64
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(binary, root, runtime, port):
    proc = subprocess.Popen([binary, "serve", root, "--runtime", runtime],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the server did not start")


def flood(port, stop, counts, lock, n, control):
    """One connection sending wrong passwords until `stop` is set; with
    `control`, the same requests for a missing public name (no check)."""
    auth = base64.b64encode(f"alice:wrong-{n}".encode()).decode()
    path = "/missing.txt" if control else "/staging/secret.txt"
    request = (f"GET {path} HTTP/1.1\r\nHost: t\r\n"
               f"Authorization: Basic {auth}\r\n\r\n").encode()
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            f = s.makefile("rb")
            while not stop.is_set():
                s.sendall(request)
                status = int(f.readline().split()[1])
                length, close = 0, False
                while True:
                    line = f.readline().lower()
                    if line in (b"\r\n", b""):
                        break
                    if line.startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                    close |= line.startswith(b"connection: close")
                f.read(length)
                with lock:
                    counts[status] = counts.get(status, 0) + 1
                if close:
                    break
            s.close()
        except (OSError, ValueError, IndexError):
            time.sleep(0.01)


def wrk(port, seconds):
    out = subprocess.run(["wrk", "-t1", "-c16", f"-d{seconds}s", "--latency",
                          f"http://127.0.0.1:{port}/public.bin"],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    pct = {}
    for p, v, unit in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        pct[p] = float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
    return rps, pct


def median_range(xs):
    return f"{statistics.median(xs):.0f} ({min(xs):.0f}–{max(xs):.0f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/nikaia")
    ap.add_argument("--cost", type=int, default=10)
    ap.add_argument("--flooders", type=int, default=64)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for tool in ("wrk", "htpasswd"):
        if not shutil.which(tool):
            raise SystemExit(f"needs {tool} (apt-get install wrk apache2-utils)")
    work = tempfile.mkdtemp()
    root = os.path.join(work, "site")
    os.makedirs(os.path.join(root, "staging"))
    with open(os.path.join(root, "public.bin"), "wb") as f:
        f.write(os.urandom(4096))
    with open(os.path.join(root, "staging", "secret.txt"), "w") as f:
        f.write("secret")
    users = os.path.join(work, "users.htpasswd")
    subprocess.run(["htpasswd", "-cbB", "-C", str(args.cost), users, "alice", "right"],
                   check=True, capture_output=True)
    port = free_port()
    runtime = os.path.join(work, "runtime.toml")
    with open(runtime, "w") as f:
        f.write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\n'
                f'[[auth]]\nmatch = "staging/**"\nhtpasswd = "{users}"\nplain-http = true\n')
    proc = start(args.binary, root, runtime, port)
    results = {"alone": [], "during a flood of wrong passwords": [],
               "during as many requests for a missing name": []}
    floods = []
    try:
        wrk(port, 2)  # warm: the kept table, the page cache
        for _ in range(args.rounds):
            results["alone"].append(wrk(port, args.seconds))
            for name, control in (("during a flood of wrong passwords", False),
                                  ("during as many requests for a missing name", True)):
                stop, lock, counts = threading.Event(), threading.Lock(), {}
                threads = [threading.Thread(target=flood, daemon=True,
                                            args=(port, stop, counts, lock, n, control))
                           for n in range(args.flooders)]
                for t in threads:
                    t.start()
                time.sleep(1)
                results[name].append(wrk(port, args.seconds))
                stop.set()
                for t in threads:
                    t.join(timeout=60)
                if not control:
                    floods.append(counts)
    finally:
        proc.terminate()
        proc.wait()
    print(f"bcrypt cost {args.cost}, {args.flooders} flooding connections, wrk -t1 -c16 "
          f"-d{args.seconds}s on a public 4 KiB file, one worker, {args.rounds} rounds "
          f"(medians, range):\n")
    print("| public load | requests/s | p50 µs | p90 µs | p99 µs |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        rps = [r for r, _ in runs]
        cells = [median_range([p[q] for _, p in runs]) for q in ("50", "90", "99")]
        print(f"| {name} | {median_range(rps)} | " + " | ".join(cells) + " |")
    total = {}
    for c in floods:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    secs = args.rounds * (args.seconds + 1)
    print("\nThe control floods the same connections with requests that need no check;"
          " the difference between the two flooded rows is what the checks cost the site.")
    print(f"\nThe flood's answers over about {secs} s: " +
          ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))


if __name__ == "__main__":
    sys.exit(main())
