#!/usr/bin/env python3
"""Full TLS handshakes with 100 certificate pairs against one (#32): the
same nikaia binary serving the same page under two runtime files, both up
at once, loaded in alternating rounds by `handshakes` (this crate: full
TLS 1.3 handshakes, X25519, AES-128-GCM, no resumption, SNI set).

- one:  a single pair (`tls-cert`/`tls-key`: site50.example,
        www.site50.example); the client asks for its two names in turn.
- many: 100 `[[certificate]]` tables (siteN.example, www.siteN.example,
        N = 0..99, ECDSA P-256 like the one); the client asks for all 200
        names in turn.

Per round and configuration: handshakes/s, the server's CPU per handshake
(utime+stime of its process, /proc/PID/stat) and the machine's
(/proc/stat, every core, client included), over SECONDS of load.
Medians (min–max) over the rounds, and the per-round ratios many/one.
With BEFORE=OLD_NIKAIA_BIN in the environment, a third server, that
binary with the `one` file, is loaded in the same rounds (the build
before the pairs were chosen per hello), and before/one is reported.

usage: benches/tls-handshakes/pairs.py NIKAIA_BIN HANDSHAKES_BIN [ROUNDS] [SECONDS] [THREADS]
"""
import json, os, socket, statistics, subprocess, sys, tempfile, time

NIKAIA, CLIENT = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
SECONDS = float(sys.argv[4]) if len(sys.argv) > 4 else 4
THREADS = int(sys.argv[5]) if len(sys.argv) > 5 else 2
TICK = os.sysconf("SC_CLK_TCK")
W = tempfile.mkdtemp(prefix="nikaia-pairs-")

def sh(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def pair(n):
    names = [f"site{n}.example", f"www.site{n}.example"]
    key, csr, pem = f"{W}/{n}.key", f"{W}/{n}.csr", f"{W}/{n}.pem"
    sh("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
    sh("openssl", "req", "-new", "-key", key, "-subj", f"/CN={names[0]}", "-out", csr)
    ext = f"{W}/{n}.ext"
    open(ext, "w").write("subjectAltName=" + ",".join(f"DNS:{x}" for x in names) + "\n")
    sh("openssl", "x509", "-req", "-in", csr, "-CA", f"{W}/ca.pem", "-CAkey", f"{W}/ca.key",
       "-CAcreateserial", "-days", "30", "-extfile", ext, "-out", pem)
    return pem, key, names

def table(pem, key):
    return f'[[certificate]]\ncert = "{pem}"\nkey = "{key}"\n'

def short(pem, key):
    return f'tls-cert = "{pem}"\ntls-key = "{key}"\n'

def start(label, port, tables, binary=NIKAIA):
    os.makedirs(f"{W}/site", exist_ok=True)
    open(f"{W}/site/index.html", "w").write("hello\n")
    rt = f"{W}/{label}.toml"
    open(rt, "w").write(f'listen = "127.0.0.1:{port}"\nworkers = 1\naccess-log = "off"\n' + "".join(tables))
    p = subprocess.Popen([binary, "serve", f"{W}/site", "--runtime", rt],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{label}: no start")

def machine_busy():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    return (sum(v) - v[3] - v[4]) / TICK  # all but idle and iowait

def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK

def round_of(server, port, names):
    time.sleep(0.5)
    m0, s0 = machine_busy(), proc_cpu(server.pid)
    out = subprocess.run([CLIENT, f"127.0.0.1:{port}", ",".join(names), str(THREADS), str(SECONDS)],
                         capture_output=True, text=True, check=True).stdout
    m1, s1 = machine_busy(), proc_cpu(server.pid)
    got = dict(kv.split("=") for kv in out.split())
    n, failed, secs = int(got["handshakes"]), int(got["failures"]), float(got["seconds"])
    if failed:
        raise SystemExit(f"{failed} handshakes failed")
    return {"rate": n / secs, "server_us": (s1 - s0) * 1e6 / n, "machine_us": (m1 - m0) * 1e6 / n}

def main():
    sh("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{W}/ca.key")
    sh("openssl", "req", "-x509", "-new", "-key", f"{W}/ca.key", "-subj", "/CN=bench CA", "-days", "30", "-out", f"{W}/ca.pem")
    pairs = [pair(n) for n in range(100)]
    one = start("one", 18443, [short(pairs[50][0], pairs[50][1])])
    many = start("many", 18444, [table(p, k) for p, k, _ in pairs])
    configs = {"one": (one, 18443, pairs[50][2]), "many": (many, 18444, [x for _, _, ns in pairs for x in ns])}
    labels = ["one", "many"]
    if os.environ.get("BEFORE"):
        before = start("before", 18445, [short(pairs[50][0], pairs[50][1])], os.environ["BEFORE"])
        configs["before"] = (before, 18445, pairs[50][2])
        labels.append("before")
    results = {label: [] for label in labels}
    try:
        for r in range(ROUNDS):
            order = labels[r % len(labels):] + labels[:r % len(labels)]
            for label in order:
                server, port, names = configs[label]
                results[label].append(round_of(server, port, names))
            print(f"round {r + 1}: " + ", ".join(f"{l} {results[l][-1]['rate']:.0f}/s {results[l][-1]['server_us']:.0f} µs" for l in order), file=sys.stderr)
    finally:
        for server, _, _ in configs.values():
            server.terminate()
    def med(xs, digits=1):
        return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"
    print(f"| configuration | handshakes/s | server CPU µs/handshake | machine CPU µs/handshake |\n|---|---|---|---|")
    for label in labels:
        rs = results[label]
        print(f"| {label} | {med([x['rate'] for x in rs])} | {med([x['server_us'] for x in rs])} | {med([x['machine_us'] for x in rs])} |")
    for a, b in [("many", "one"), ("before", "one")][: len(labels) - 1]:
        ratio = lambda k: [x[k] / y[k] for x, y in zip(results[a], results[b])]
        print(f"\n{a}/{b} per round: handshakes/s {med(ratio('rate'), 3)}, server CPU {med(ratio('server_us'), 3)}, machine CPU {med(ratio('machine_us'), 3)}")
    json.dump(results, open(os.environ.get("PAIRS_JSON", "/dev/null"), "w"))

main()
