#!/usr/bin/env python3
"""Instructions per request of one or more nikaia builds, counted by
valgrind (callgrind): a count that does not drift with the machine's load,
for this VM, which has no hardware counters for `perf stat`.

Each build runs `nikaia serve` (workers = 1, access log off) under
`valgrind --tool=callgrind` twice: once answering A requests on one
kept-alive connection, once answering B; the difference of the two totals,
over B - A, is the instructions one more request costs (start-up, the
warm-up and shutdown cancel out). Both builds get the same requests.

With --h2 the requests are HTTP/2 over h2c (prior knowledge), sent by
h2load (Debian nghttp2-client) on one connection, one stream at a time.

usage: benches/http/instructions.py [--case NAME] [--h2] LABEL=BINARY [LABEL=BINARY ...]
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import syscalls  # noqa: E402  (connect, get, CASES)

A, B = 200, 1200


def total(binary, root, work, paths, n, h2=False):
    out = tempfile.mkdtemp()
    proc, port = syscalls.start(binary, root, work, None, wait=120,
                                prefix=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p"])
    if h2:
        # h2load takes one URI per request, in turn, on its connection.
        uris = [f"http://127.0.0.1:{port}{paths[i % len(paths)]}" for i in range(min(n, len(paths)))]
        subprocess.run(["h2load", "-n", str(n), "-c", "1", "-m", "1", *uris],
                       check=True, stdout=subprocess.DEVNULL)
    else:
        s = syscalls.connect(port, None)
        buf = bytearray()
        for i in range(n):
            buf = syscalls.get(s, paths[i % len(paths)], buf)
        s.close()
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    ir = 0
    for f in glob.glob(f"{out}/cg.*"):
        with open(f) as fh:
            for line in fh:
                m = re.match(r"(?:summary|totals): (\d+)", line)
                if m:
                    ir = max(ir, int(m.group(1)))
    return ir


def main():
    if not shutil.which("valgrind"):
        raise SystemExit("needs valgrind: apt-get install valgrind")
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append")
    ap.add_argument("--h2", action="store_true", help="HTTP/2 (h2c) requests, sent by h2load")
    ap.add_argument("builds", nargs="+", metavar="LABEL=BINARY")
    args = ap.parse_args()
    work, root = syscalls.fixture()
    cases = [c for c in syscalls.CASES if not args.case or any(t in c[0] for t in args.case)]
    print(f"Instructions per {'HTTP/2 ' if args.h2 else ''}request (valgrind --tool=callgrind, one kept-alive connection, "
          f"({B} - {A} requests), workers = 1):\n")
    labels = [b.split("=", 1)[0] for b in args.builds]
    print("| case | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, paths in cases:
        cells = []
        for b in args.builds:
            _, binary = b.split("=", 1)
            per = (total(binary, root, work, paths, B, args.h2)
                   - total(binary, root, work, paths, A, args.h2)) / (B - A)
            cells.append(f"{per:,.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
