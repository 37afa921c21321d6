#!/usr/bin/env python3
"""Request bodies over HTTP/2 against a nikaia server (h2c by prior
knowledge), with the `h2` library as a well-behaved client that keeps to
the windows the server grants.

    python3 tests/h2/bodies.py HOST PORT SCENARIO

prints JSON lines (what was seen) and exits 0; the Rust test
(tests/tests/bodies_h2.rs) checks them. The server runs the program of
tests/src/bodies.rs.
"""

import json
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


class Client:
    """One connection; what came back, per stream."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self.flush()
        self.status = {}
        self.informational = {}
        self.body = {}
        self.ended = set()
        self.resets = {}
        self.goaway = None
        self.window_updates = {}

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def pump(self, timeout):
        """Reads and handles what arrives within `timeout` seconds (less
        if the socket closes)."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 16)
        except socket.timeout:
            return False
        if not data:
            raise EOFError("the server closed the connection")
        for e in self.conn.receive_data(data):
            if isinstance(e, h2.events.InformationalResponseReceived):
                self.informational.setdefault(e.stream_id, []).append(
                    int(dict(e.headers)[":status"])
                )
            elif isinstance(e, h2.events.ResponseReceived):
                self.status[e.stream_id] = int(dict(e.headers)[":status"])
            elif isinstance(e, h2.events.DataReceived):
                self.body.setdefault(e.stream_id, bytearray()).extend(e.data)
                self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                self.resets[e.stream_id] = int(e.error_code)
            elif isinstance(e, h2.events.ConnectionTerminated):
                self.goaway = int(e.error_code)
            elif isinstance(e, h2.events.WindowUpdated):
                n = self.window_updates.get(e.stream_id, 0)
                self.window_updates[e.stream_id] = n + e.delta
        self.flush()
        return True

    def request(self, stream, method, path, extra=(), end=False):
        headers = [
            (":method", method),
            (":scheme", "http"),
            (":authority", "t"),
            (":path", path),
        ] + list(extra)
        self.conn.send_headers(stream, headers, end_stream=end)
        self.flush()

    def send(self, stream, data, end=False, wait=10.0):
        """Sends `data` as the windows allow; returns how much went out
        before `wait` seconds passed without room (all of it, normally)."""
        sent = 0
        while sent < len(data):
            room = min(
                self.conn.local_flow_control_window(stream),
                self.conn.max_outbound_frame_size,
                len(data) - sent,
            )
            if room <= 0:
                if not self.pump(wait):
                    return sent
                continue
            self.conn.send_data(stream, data[sent : sent + room])
            self.flush()
            sent += room
        if end:
            self.conn.end_stream(stream)
            self.flush()
        return sent

    def until(self, done, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            self.pump(0.05)
        return done()

    def answered(self, *streams):
        return lambda: all(s in self.ended or s in self.resets for s in streams)

    def seen(self):
        return {
            "status": {str(k): v for k, v in self.status.items()},
            "informational": {str(k): v for k, v in self.informational.items()},
            "body": {str(k): bytes(v).decode("latin-1") for k, v in self.body.items()},
            "resets": {str(k): v for k, v in self.resets.items()},
            "goaway": self.goaway,
            "window_updates": {str(k): v for k, v in self.window_updates.items()},
        }


def fnv(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%d %016x" % (len(data), h)


def refused(c):
    """Bodies refused from their heads and as they arrive, a program's own
    refusal, 100 Continue only for a wanted body: each answered on its
    stream, the connection kept."""
    c.request(1, "POST", "/small", [("content-length", "1200")])
    c.request(3, "POST", "/small")
    c.send(3, b"y" * 1200, end=True)
    c.request(5, "PUT", "/guarded", [("expect", "100-continue"), ("content-length", "5")])
    c.request(7, "PUT", "/guarded", [
        ("expect", "100-continue"),
        ("authorization", "Bearer open-sesame"),
        ("content-length", "5"),
    ])
    c.until(lambda: 7 in c.informational)
    c.send(7, b"hello", end=True)
    c.request(9, "POST", "/echo", [("content-encoding", "gzip"), ("content-length", "3")])
    c.send(9, b"abc", end=True)
    c.until(c.answered(1, 3, 5, 7, 9))
    c.request(11, "GET", "/", end=True)
    c.until(c.answered(11))


def paused(c):
    """A sink that pauses: its stream's window shuts, a sibling stream is
    read and answered meanwhile; resumed (the test does it when told), the
    rest arrives."""
    total = 4 << 20
    c.request(1, "POST", "/hold", [("content-length", str(total))])
    data = b"x" * total
    sent = c.send(1, data, wait=1.0)
    sibling = bytes(range(256)) * 4096
    c.request(3, "POST", "/hash")
    c.send(3, sibling, end=True)
    c.until(c.answered(3))
    print(json.dumps({"blocked_after": sent, "sibling": c.seen()["body"].get("3"),
                      "sibling_expected": fnv(sibling)}), flush=True)
    sys.stdin.readline()
    c.send(1, data[sent:], end=True)
    c.until(c.answered(1), timeout=60)


def clocks(c):
    """Each body clock on its own stream (the server's are short): 408 and
    a reset for each, and the connection goes on serving."""
    c.request(1, "POST", "/echo", [("content-length", "100")])
    c.send(1, b"x" * 10)
    c.request(3, "POST", "/hash", [("content-length", "100000")])
    c.send(3, b"x" * 10)
    c.request(5, "POST", "/hash", [("content-length", "100000")])
    c.request(7, "GET", "/", end=True)
    deadline = time.monotonic() + 10
    while not c.answered(1, 3, 5)() and time.monotonic() < deadline:
        if 5 not in c.status:
            c.send(5, b"x" * 10)
        c.pump(0.1)
    c.request(9, "GET", "/", end=True)
    c.until(c.answered(7, 9))


def upload(c):
    """A 3 MiB body hashed as it streams: the window updates that let it
    through."""
    body = bytes(range(256)) * (3 << 12)
    c.request(1, "POST", "/hash", [("content-length", str(len(body)))])
    c.send(1, body, end=True)
    c.until(c.answered(1))
    print(json.dumps({"expected": fnv(body)}), flush=True)


def to_file(c):
    """Bodies written to files (the server of tests/tests/to_file.rs): 100
    Continue once the file is open, a refusal from the head without it, a
    refusal after a small body, a stream reset mid-body, an empty body that
    ends with its head; the connection serves on."""
    first = bytes(range(256)) * 1200
    c.request(1, "PUT", "/create/h2a", [("expect", "100-continue"),
                                        ("content-length", str(len(first)))])
    c.until(lambda: 1 in c.informational)
    c.send(1, first, end=True)
    c.until(c.answered(1))
    c.request(3, "PUT", "/create/h2a", [("expect", "100-continue"), ("content-length", "10")])
    c.until(c.answered(3))
    c.request(5, "PUT", "/create/h2b", [("content-length", "100000")])
    c.send(5, b"b" * 100000, end=True)
    c.request(7, "PUT", "/create/h2a", [("content-length", "1000")])
    c.send(7, b"c" * 1000, end=True)
    c.request(9, "PUT", "/create/h2gone", [("content-length", "200000")])
    c.send(9, b"d" * 50000)
    c.conn.reset_stream(9)
    c.flush()
    c.request(11, "PUT", "/create/h2empty", end=True)
    c.until(c.answered(5, 7, 11))
    c.request(13, "GET", "/nothing", end=True)
    c.until(c.answered(13))


SCENARIOS = {"refused": refused, "paused": paused, "clocks": clocks, "upload": upload,
             "to_file": to_file}


def main():
    host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    c = Client(host, port)
    try:
        SCENARIOS[name](c)
    except EOFError as e:
        print(json.dumps({"error": str(e)}), flush=True)
    print(json.dumps(c.seen()), flush=True)


if __name__ == "__main__":
    main()
