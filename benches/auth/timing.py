#!/usr/bin/env python3
"""Does the time of a refused HTTP Basic login tell a known user from an
unknown one?

Sends interleaved requests, in random order, with (a) a known user and a
wrong password and (b) an unknown user and a wrong password, times each from
the request's first byte to the answer's last, and prints the medians, the
interquartile ranges, the ratio of the medians and a permutation test's
p-value on the difference of the medians. Python 3 standard library only.

    python3 benches/auth/timing.py http://127.0.0.1:8080/ alice
"""

import argparse
import base64
import http.client
import random
import secrets
import socket
import ssl
import statistics
import sys
import time
import urllib.parse


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="a URL under an [[auth]] rule, e.g. http://127.0.0.1:8080/")
    p.add_argument("user", help="a user the htpasswd file lists")
    p.add_argument("--rounds", type=int, default=200, help="requests of each kind (default 200)")
    p.add_argument("--warmup", type=int, default=10, help="requests of each kind sent first and not counted (default 10)")
    p.add_argument("--unknown", help="the unknown user (default: a random name)")
    p.add_argument("--password", help="the wrong password (default: a random one)")
    p.add_argument("--permutations", type=int, default=10000, help="permutations for the p-value (default 10000)")
    p.add_argument("--seed", type=int, help="seed for the order and the permutations")
    p.add_argument("--insecure", action="store_true", help="https: do not verify the certificate")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    return p.parse_args()


class Client:
    """One kept-alive connection to the URL's server, opened again when the
    server closes it."""

    def __init__(self, url, insecure, timeout):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            sys.exit(f"timing.py: {url}: the scheme must be http or https")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self.context = None
        if self.https:
            self.context = ssl.create_default_context()
            if insecure:
                self.context.check_hostname = False
                self.context.verify_mode = ssl.CERT_NONE
        self.conn = None

    def connect(self):
        if self.https:
            self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self.context)
        else:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self.conn.connect()
        # No Nagle delay on a small request after a small answer.
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get(self, authorization):
        """The answer's status and the seconds from sending to its last byte.
        The connection is made before the clock starts."""
        for attempt in (1, 2):
            if self.conn is None:
                self.connect()
            try:
                start = time.perf_counter()
                self.conn.request("GET", self.target, headers={"Authorization": authorization})
                response = self.conn.getresponse()
                response.read()
                elapsed = time.perf_counter() - start
            except (http.client.HTTPException, ConnectionError):
                # The server closed a kept connection: once more on a new one.
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if response.will_close:
                self.conn.close()
                self.conn = None
            return response.status, elapsed


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def quartiles(samples):
    q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q2, q3


def permutation_p(a, b, permutations, rng):
    """Two-sided p-value of the difference of the medians: how often a random
    split of the pooled samples into groups of the same sizes differs at
    least as much."""
    observed = abs(statistics.median(a) - statistics.median(b))
    pooled = a + b
    n = len(a)
    extreme = 0
    for _ in range(permutations):
        rng.shuffle(pooled)
        if abs(statistics.median(pooled[:n]) - statistics.median(pooled[n:])) >= observed:
            extreme += 1
    return (extreme + 1) / (permutations + 1)


def main():
    args = parse_args()
    if args.rounds < 2:
        sys.exit("timing.py: --rounds must be at least 2")
    rng = random.Random(args.seed)
    unknown = args.unknown or "nobody-" + secrets.token_hex(6)
    password = args.password or "wrong-" + secrets.token_hex(12)
    if unknown == args.user:
        sys.exit("timing.py: the unknown user must differ from the known one")
    kinds = {
        "known user, wrong password": basic(args.user, password),
        "unknown user, wrong password": basic(unknown, password),
    }
    names = list(kinds)
    client = Client(args.url, args.insecure, args.timeout)

    order = names * args.warmup
    rng.shuffle(order)
    for name in order:
        client.get(kinds[name])

    times = {name: [] for name in names}
    statuses = {name: {} for name in names}
    order = names * args.rounds
    rng.shuffle(order)
    for i, name in enumerate(order, 1):
        status, elapsed = client.get(kinds[name])
        times[name].append(elapsed)
        statuses[name][status] = statuses[name].get(status, 0) + 1
        if i % 50 == 0:
            print(f"\r{i}/{len(order)} requests", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    print(f"{args.url}: {args.rounds} requests of each kind, interleaved in random order")
    for name in names:
        q1, median, q3 = quartiles(times[name])
        shown = ", ".join(f"{status}: {count}" for status, count in sorted(statuses[name].items()))
        print(f"  {name:30} median {median * 1e3:9.3f} ms  IQR {q1 * 1e3:9.3f} .. {q3 * 1e3:9.3f} ms ({(q3 - q1) * 1e3:.3f})  status {shown}")
    known, unknown_times = (times[name] for name in names)
    ratio = statistics.median(unknown_times) / statistics.median(known)
    p = permutation_p(known, unknown_times, args.permutations, rng)
    print(f"  ratio of medians (unknown / known): {ratio:.4f}")
    print(f"  permutation test on the difference of medians ({args.permutations} permutations): p = {p:.4f}")
    if p < 0.01:
        print("  the two kinds differ at the 1% level: the time may tell a known user from an unknown one")
    else:
        print("  no difference at the 1% level")
    for name in names:
        if set(statuses[name]) != {401}:
            print(f"  warning: not every \"{name}\" request was answered 401; is the URL under an [[auth]] rule?")


if __name__ == "__main__":
    main()
