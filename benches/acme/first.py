#!/usr/bin/env python3
"""Time from start to the first certificate served, nikaia beside Debian's
lego against the same Pebble (#33), and the requests to the CA per name.

One Pebble (Debian's 2.4, PEBBLE_VA_NOSLEEP=1, PEBBLE_WFE_NONCEREJECT as
given: 30 by default) with pebble-challtestsrv answering every name with
127.0.0.1; its httpPort and tlsPort are the ports nikaia listens on and
lego answers on. Each round runs, in alternating order:

- nikaia HTTP-01 and TLS-ALPN-01: `nikaia serve` with a fresh storage and
  `[acme]` for a fresh name; the time from the spawn to the first TLS
  handshake that verifies against Pebble's root with that name (polled
  every 10 ms);
- lego HTTP-01 and TLS-ALPN-01: `lego run` with a fresh account for a
  fresh name; the time from the spawn to its exit with the certificate.

Then, with PEBBLE_WFE_NONCEREJECT=0, one name each way: the requests
Pebble logged for it (`-> calling handler()` lines).

usage: benches/acme/first.py NIKAIA_BIN [ROUNDS] [NONCEREJECT]
"""
import json, os, socket, ssl, statistics, subprocess, sys, tempfile, time, urllib.request

NIKAIA = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
REJECT = sys.argv[3] if len(sys.argv) > 3 else "30"
W = tempfile.mkdtemp(prefix="nikaia-acme-bench-")

def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

PORT, MGMT, DNS, HTTP, TLS = free(), free(), free(), free(), free()

def sh(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def pebble_tls():
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", f"{W}/ca.key", "-out", f"{W}/ca.pem", "-days", "30", "-subj", "/CN=bench pebble https CA")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", f"{W}/key.pem", "-out", f"{W}/leaf.csr", "-subj", "/CN=localhost")
    open(f"{W}/ext", "w").write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    sh("openssl", "x509", "-req", "-in", f"{W}/leaf.csr", "-CA", f"{W}/ca.pem", "-CAkey", f"{W}/ca.key",
       "-CAcreateserial", "-days", "30", "-extfile", f"{W}/ext", "-out", f"{W}/cert.pem")

def start_pebble(reject):
    json.dump({"pebble": {"listenAddress": f"127.0.0.1:{PORT}", "managementListenAddress": f"127.0.0.1:{MGMT}",
                          "certificate": f"{W}/cert.pem", "privateKey": f"{W}/key.pem", "httpPort": HTTP, "tlsPort": TLS,
                          "ocspResponderURL": "", "externalAccountBindingRequired": False}}, open(f"{W}/pebble.json", "w"))
    env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT=reject)
    log = open(f"{W}/pebble.log", "a")
    p = subprocess.Popen(["pebble", "-config", f"{W}/pebble.json", "-dnsserver", f"127.0.0.1:{DNS}"], env=env, stdout=log, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", PORT), 0.2).close(); break
        except OSError:
            time.sleep(0.05)
    ctx = ssl.create_default_context(cafile=f"{W}/ca.pem")
    root = urllib.request.urlopen(f"https://127.0.0.1:{MGMT}/roots/0", context=ctx).read()
    open(f"{W}/issuer.pem", "wb").write(root)
    return p

def pebble_lines():
    return sum(1 for l in open(f"{W}/pebble.log") if "-> calling handler()" in l)

def nikaia(name, challenge):
    d = tempfile.mkdtemp(dir=W)
    os.makedirs(f"{d}/site"); open(f"{d}/site/index.html", "w").write("hello\n")
    open(f"{d}/rt.toml", "w").write(
        f'listen = [{{ address = "127.0.0.1:{TLS}", tls = true }}, {{ address = "127.0.0.1:{HTTP}", tls = false, https-redirect = true }}]\n'
        f'workers = 1\naccess-log = "off"\nerror-log = "{d}/error.log"\n[acme]\ndomains = ["{name}"]\n'
        f'directory = "https://127.0.0.1:{PORT}/dir"\nca-roots = "{W}/ca.pem"\nagree-to-terms = true\n'
        f'storage = "{d}/acme"\nchallenges = ["{challenge}"]\n')
    ctx = ssl.create_default_context(cafile=f"{W}/issuer.pem")
    t0 = time.monotonic()
    p = subprocess.Popen([NIKAIA, "serve", f"{d}/site", "--runtime", f"{d}/rt.toml"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.monotonic() - t0 < 60:
            try:
                with socket.create_connection(("127.0.0.1", TLS), 1) as s, ctx.wrap_socket(s, server_hostname=name):
                    return time.monotonic() - t0
            except (OSError, ssl.SSLError):
                time.sleep(0.01)
        raise SystemExit(f"nikaia: no certificate for {name}: {open(d + '/error.log').read()}")
    finally:
        p.terminate(); p.wait()

def lego(name, challenge):
    d = tempfile.mkdtemp(dir=W)
    args = ["--http", "--http.port", f"127.0.0.1:{HTTP}"] if challenge == "http-01" else ["--tls", "--tls.port", f"127.0.0.1:{TLS}"]
    env = dict(os.environ, LEGO_CA_CERTIFICATES=f"{W}/ca.pem")
    t0 = time.monotonic()
    r = subprocess.run(["lego", "--path", d, "--server", f"https://127.0.0.1:{PORT}/dir", "--accept-tos", "--email", "b@nikaia.test",
                        "--domains", name] + args + ["run"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"lego: {r.stderr[-2000:]}")
    return time.monotonic() - t0

def main():
    pebble_tls()
    dns = subprocess.Popen(["pebble-challtestsrv", "-dns01", f"127.0.0.1:{DNS}", "-http01", "", "-https01", "", "-tlsalpn01", "",
                            "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-management", f"127.0.0.1:{free()}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pebble = start_pebble(REJECT)
    runs = {(c, ch): [] for c in ("nikaia", "lego") for ch in ("http-01", "tls-alpn-01")}
    try:
        n = 0
        for r in range(ROUNDS):
            order = list(runs)
            if r % 2:
                order.reverse()
            for client, challenge in order:
                n += 1
                name = f"r{n}-{client}.nikaia.test"
                secs = (nikaia if client == "nikaia" else lego)(name, challenge)
                runs[(client, challenge)].append(secs)
            print(f"round {r + 1}: " + ", ".join(f"{c} {ch} {runs[(c, ch)][-1]:.2f} s" for c, ch in order), file=sys.stderr)
        pebble.terminate(); pebble.wait()
        pebble = start_pebble("0")
        requests = {}
        for challenge in ("http-01", "tls-alpn-01"):
            before = pebble_lines()
            nikaia(f"count-{challenge}.nikaia.test", challenge)
            time.sleep(0.3)
            requests[challenge] = pebble_lines() - before
    finally:
        pebble.terminate(); dns.terminate()
    med = lambda xs: f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"
    print(f"PEBBLE_WFE_NONCEREJECT={REJECT}, PEBBLE_VA_NOSLEEP=1, {ROUNDS} rounds; seconds from the spawn to the first certificate, median (min–max):\n")
    print("| client | HTTP-01 | TLS-ALPN-01 |\n|---|---|---|")
    for client in ("nikaia", "lego"):
        print(f"| {client} | {med(runs[(client, 'http-01')])} | {med(runs[(client, 'tls-alpn-01')])} |")
    for ch in ("http-01", "tls-alpn-01"):
        ratio = [a / b for a, b in zip(runs[("nikaia", ch)], runs[("lego", ch)])]
        print(f"\nnikaia/lego per round, {ch}: {med(ratio)}")
    print(f"\nrequests to the CA for one name (PEBBLE_WFE_NONCEREJECT=0, the account made too): HTTP-01 {requests['http-01']}, TLS-ALPN-01 {requests['tls-alpn-01']}")

main()
