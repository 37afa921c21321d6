#!/usr/bin/env python3
"""Compression kept like files (spec/files.md) beside nginx's `gzip on`.

nikaia serve (its kept variants, made once per file) against nginx 1 worker
with `gzip on` at gzip_comp_level 1 (its default) and 6, on a 100 KiB
JavaScript file and a 20 KiB HTML page, asked for with
`Accept-Encoding: gzip` and with `br, gzip`. For each: requests/s, machine
CPU µs per request (/proc/stat), server CPU µs per request, and the body
bytes on the wire (curl's size_download, the coded bytes). Runs alternate
between the servers (order reversed every round) and each is guarded
against other load like bench.py's --tls runs; medians (min–max).

Usage: benches/http/compress.py --nikaia target/release/nikaia [--repeats 10]
"""

import argparse
import gzip
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

GZIP_TYPES = "text/html text/css application/javascript text/javascript application/json image/svg+xml"


class Nginx(bench.Server):
    """nginx as bench.py runs it, plus `gzip on` at `level` (and the types
    it needs to know a .js is JavaScript)."""

    def __init__(self, args, root, work, level):
        super().__init__("nginx", args, root, work)
        self.level = level
        self.label = f"nginx gzip {level}"

    def nginx_conf(self):
        conf = super().nginx_conf()
        extra = (f"    gzip on;\n    gzip_comp_level {self.level};\n    gzip_types {GZIP_TYPES};\n"
                 "    gzip_min_length 256;\n    gzip_vary on;\n"
                 "    types { text/html html; application/javascript js; text/css css; }\n")
        return conf.replace("    sendfile on;\n", "    sendfile on;\n" + extra, 1)


def javascript(size, seed):
    """Code-like text: identifiers, keywords, numbers, strings, punctuation,
    so it compresses about as real unminified JavaScript does (3–5× by
    gzip), not as a repeated line would."""
    rnd = random.Random(seed)
    names = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 10)))
             for _ in range(400)]
    keywords = ["function", "return", "const", "let", "if", "else", "for", "while", "new", "this",
                "await", "async", "null", "true", "false", "typeof", "export", "import"]
    out = []
    n = 0
    while n < size:
        kind = rnd.random()
        if kind < 0.3:
            line = f"  const {rnd.choice(names)} = {rnd.choice(names)}.{rnd.choice(names)}({rnd.randint(0, 9999)});"
        elif kind < 0.5:
            line = f"  if ({rnd.choice(names)} {rnd.choice(['===', '!==', '<', '>='])} {rnd.choice(names)}) {{"
        elif kind < 0.65:
            line = f"  return {rnd.choice(keywords)} {rnd.choice(names)}[\"{rnd.choice(names)}-{rnd.randint(0, 99)}\"];"
        elif kind < 0.8:
            line = f"function {rnd.choice(names)}({', '.join(rnd.sample(names, rnd.randint(0, 4)))}) {{"
        else:
            line = "  }" if rnd.random() < 0.5 else f"  // {' '.join(rnd.sample(names, 5))}"
        out.append(line)
        n += len(line) + 1
    return ("\n".join(out) + "\n").encode()[:size]


def html(size, seed):
    rnd = random.Random(seed)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
             for _ in range(600)]
    out = ["<!doctype html>", "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Page</title></head><body>"]
    n = sum(map(len, out))
    while n < size:
        tag = rnd.choice(["p", "li", "h2", "td"])
        cls = rnd.choice(words)
        line = f"<{tag} class=\"{cls}\">{' '.join(rnd.choice(words) for _ in range(rnd.randint(5, 25)))}</{tag}>"
        out.append(line)
        n += len(line) + 1
    return ("\n".join(out) + "\n").encode()[:size]


def fixture(root):
    os.makedirs(root, exist_ok=True)
    files = {"app.js": javascript(100 << 10, 1), "page.html": html(20 << 10, 2)}
    for name, data in files.items():
        path = os.path.join(root, name)
        if not os.path.exists(path) or open(path, "rb").read() != data:
            with open(path, "wb") as f:
                f.write(data)
    time.sleep(0.05)
    return files


def curl(url, encoding):
    """(Content-Encoding, body bytes as sent) of one GET."""
    out = subprocess.run(["curl", "-s", "-D", "-", "-o", "/tmp/nikaia-compress-body", "-H",
                          f"Accept-Encoding: {encoding}", url], capture_output=True, text=True, check=True).stdout
    coding = next((l.split(":", 1)[1].strip() for l in out.splitlines()
                   if l.lower().startswith("content-encoding:")), None)
    with open("/tmp/nikaia-compress-body", "rb") as f:
        return coding, f.read()


def check(servers, files, cases):
    """Each server answers each case coded, and the gzip bodies decode to
    the file; nikaia's variants are made first (they are the case measured).
    Returns {(server, case): (coding, wire bytes)}."""
    wire = {}
    for s in servers:
        for name, path, _, headers in cases:
            encoding = headers[0].split(":", 1)[1].strip()
            # nikaia answers with a lesser coding (or none) until the best
            # one's variant is made; nginx has gzip only.
            best = encoding.split(",")[0].strip() if s.kind == "nikaia" else "gzip"
            deadline = time.time() + 60
            while True:
                coding, body = curl(s.base + path, encoding)
                if coding == best or time.time() > deadline:
                    break
                time.sleep(0.1)
            if coding != best:
                raise SystemExit(f"{s.label} never coded {path} with {best} for {encoding}")
            if coding == "gzip" and gzip.decompress(body) != files[path.lstrip("/")]:
                raise SystemExit(f"{s.label}: {path} gzip does not decode to the file")
            wire[(s.label, name)] = (coding, len(body))
    return wire


CASES = [
    ("100 KiB JS, gzip", "/app.js", None, ("Accept-Encoding: gzip",)),
    ("20 KiB HTML, gzip", "/page.html", None, ("Accept-Encoding: gzip",)),
    ("100 KiB JS, br, gzip", "/app.js", None, ("Accept-Encoding: br, gzip",)),
    ("20 KiB HTML, br, gzip", "/page.html", None, ("Accept-Encoding: br, gzip",)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nikaia", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--max-other", type=float, default=20)
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--max-wait", type=float, default=300)
    args = ap.parse_args()
    args.workers = 1
    work = os.path.abspath("target/bench-http")
    root = os.path.join(work, "compress-site")
    os.makedirs(work, exist_ok=True)
    files = fixture(root)
    nikaia = bench.Server("nikaia", args, root, work)
    nikaia.label = "nikaia"
    servers = [nikaia, Nginx(args, root, work, 1), Nginx(args, root, work, 6)]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    nginx = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    print(f"# benches/http/compress.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"Machine: {os.cpu_count()} CPUs ({cpu}), Linux {os.uname().release}; {nginx}; "
          f"nikaia {bench.binary_id(args.nikaia)}. wrk -t1 -c{args.conns}, {args.seconds} s per run, "
          f"{args.repeats} rounds, order reversed every round; median (min–max).\n")
    for s in servers:
        s.start()
    try:
        wire = check(servers, files, CASES)
        results, redone = bench.guarded_pair(args, servers, CASES)
    finally:
        for s in servers:
            s.stop()
    lines = bench.pair_lines(args, "nikaia (kept variants) vs nginx gzip on, one worker each", servers, CASES,
                             results, redone, "nikaia", "nginx gzip 6",
                             "Machine CPU includes wrk; server CPU is the server process's (nginx: its worker).")
    lines += ["", "Ratios nikaia / nginx gzip 1 (medians):", "",
              "| case | requests/s | server CPU/req | machine CPU/req |", "|---|---|---|---|"]
    for name, *_ in CASES:
        ra, rb = results["nikaia"][name], results["nginx gzip 1"][name]
        ratio = lambda k: bench.med([x[k] for x in ra]) / bench.med([x[k] for x in rb])
        lines.append(f"| {name} | {ratio('rps'):.2f} | {ratio('server_us'):.2f} | {ratio('machine_us'):.2f} |")
    lines += ["", "Bytes on the wire (the coded body, curl's size_download):", "",
              "| case | " + " | ".join(s.label for s in servers) + " |", "|---|" + "---|" * len(servers)]
    for name, *_ in CASES:
        lines.append(f"| {name} | " + " | ".join(
            f"{wire[(s.label, name)][1]} ({wire[(s.label, name)][0]})" for s in servers) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
