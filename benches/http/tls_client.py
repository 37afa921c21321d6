#!/usr/bin/env python3
"""The client's side of one TLS record per answer: wrk's CPU per request
(getrusage of the child) and, in a separate run, its syscalls per request
(strace -c -f; the "total" row is left out), against two builds of nikaia
over HTTPS, interleaved rounds, on /k4/ (64 × 4 KiB, kept) and /k12/
(64 × 12 KiB, unkept). DIR holds cert.pem, key.pem and root/{k4,k12}/N.bin.

usage: benches/http/tls_client.py DIR AFTER_BIN BEFORE_BIN [ROUNDS]
"""
import os, re, resource, socket, statistics, subprocess, sys, time
W = sys.argv[1]
sys.argv = sys.argv[1:]
CNF = """openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1.3
MaxProtocol = TLSv1.3
Ciphersuites = TLS_AES_128_GCM_SHA256
Groups = X25519
"""
open(f"{W}/client.cnf", "w").write(CNF)
ENV = dict(os.environ, OPENSSL_CONF=f"{W}/client.cnf")
def lua(prefix):
    p = f"{W}/rot-{prefix.strip('/')}.lua"
    open(p, "w").write(f'local i = 0\nrequest = function()\n i = (i % 64) + 1\n return wrk.format("GET", "{prefix}" .. (i - 1) .. ".bin")\nend\n')
    return p
def start(binary, port):
    rt = f"{W}/rt-{port}.toml"
    open(rt, "w").write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\ntls-cert = "{W}/cert.pem"\ntls-key = "{W}/key.pem"\n')
    p = subprocess.Popen([binary, "serve", f"{W}/root", "--runtime", rt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try: socket.create_connection(("127.0.0.1", port), timeout=0.2).close(); return p
        except OSError: time.sleep(0.05)
    raise SystemExit("no start")
def wrk(port, prefix, secs, strace=None):
    cmd = ["wrk", "-t1", "-c16", f"-d{secs}s", "-s", lua(prefix), f"https://127.0.0.1:{port}/"]
    if strace: cmd = ["strace", "-c", "-f", "-o", strace] + cmd
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    n = int(re.search(r"(\d+) requests in", out).group(1))
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e6 / n
    return n, cpu, float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
def strace_counts(path, n):
    calls = {}
    for l in open(path):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", l)
        if m and m.group(2) != "total": calls[m.group(2)] = int(m.group(1)) / n
    return calls
builds = {"after": sys.argv[1], "before": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
res = {(b, c): [] for b in builds for c in ("/k4/", "/k12/")}
port = 19000
for r in range(rounds):
    for c in ("/k4/", "/k12/"):
        for b in (list(builds) if r % 2 == 0 else list(builds)[::-1]):
            port += 1
            p = start(builds[b], port)
            try:
                wrk(port, c, 1)
                n, cpu, rps = wrk(port, c, 3)
                res[(b, c)].append((cpu, rps))
                print(f"round {r+1} {c} {b}: {rps:.0f} req/s, wrk CPU {cpu:.2f} us/req", file=sys.stderr, flush=True)
            finally:
                p.terminate(); p.wait()
for c in ("/k4/", "/k12/"):
    for b in builds:
        port += 1
        p = start(builds[b], port)
        try:
            wrk(port, c, 1)
            n, _, _ = wrk(port, c, 2, strace=f"{W}/strace-{b}-{c.strip('/')}.txt")
            calls = strace_counts(f"{W}/strace-{b}-{c.strip('/')}.txt", n)
        finally:
            p.terminate(); p.wait()
        top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v >= 0.05)
        print(f"{c} {b}: wrk syscalls/request: total {sum(calls.values()):.2f}: {top}")
for c in ("/k4/", "/k12/"):
    for b in builds:
        cpus = [x[0] for x in res[(b, c)]]; rps = [x[1] for x in res[(b, c)]]
        print(f"{c} {b}: wrk CPU us/req median {statistics.median(cpus):.2f} ({min(cpus):.2f}-{max(cpus):.2f}); req/s median {statistics.median(rps):.0f} ({min(rps):.0f}-{max(rps):.0f})")
    a = [x[0] for x in res[("after", c)]]; b_ = [x[0] for x in res[("before", c)]]
    print(f"{c}: wrk CPU/req after/before per round: " + ", ".join(f"{x/y:.2f}" for x, y in zip(a, b_)) + f"; medians ratio {statistics.median(a)/statistics.median(b_):.2f}")
