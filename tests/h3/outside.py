#!/usr/bin/env python3
"""Scenarios of tests/tests/h3_outside.rs: HTTP/3 clients that behave as an
outsider's might, each on real QUIC connections to 127.0.0.1 (aioquic, driven
by tests/h3/h3wire.py's Driver). Each prints one JSON line and exits 0.

    outside.py hold --port P --count N [--ping]
        N connections, one GET / each (answered), then kept open: every
        datagram acknowledged, PINGs every 0.5 s with --ping, no request.
        Prints {"held": N} once all are answered, then runs until stdin
        closes, and prints {"open": n, "closes": [CLOSE, ...]} (CLOSE: the
        server's CONNECTION_CLOSE, "by": "server"|"client").

    outside.py ping --port P --seconds S
        One GET /, then only PINGs (every 0.25 s) for S seconds. Prints
        {"answered": status, "close": CLOSE or null}.

    outside.py partial-headers --port P --seconds S
        One GET / (answered), then a request stream that carries the first
        3 octets of a HEADERS frame and nothing more; PINGs every 0.25 s
        for S seconds. Prints {"answered": status, "reset": code or null,
        "close": CLOSE or null}.

    outside.py upgrade-download --port P --path /x --pid PID --seconds S
        GET --path (a large answer, read as fast as it comes); once 4 MiB
        arrived, SIGUSR2 to PID (an upgrade), then S seconds reading on. Prints {"received": octets, "close":
        CLOSE or null, "reset": code or null}.

    outside.py gaps --port P --path /x
        GET --path with a sliding 1 MiB stream window (so the client's
        socket buffer never overflows: whatever is missing was never sent
        or was lost before it), every 1-RTT packet number received logged.
        Prints {"received": octets, "packets": n, "missing": n,
        "gaps": [runs of consecutive missing packet numbers, longest
        first]}.

    outside.py paused-upload --port P --path /x --pause S
        PUT --path with content-length 20000: 10000 octets, a pause of S
        seconds (datagrams acknowledged, nothing sent), the other 10000.
        Prints {"status": status or null, "close": CLOSE or null}.

Options: --authority (default localhost), --cafile CA.pem (else no check).
"""

import argparse
import json
import os
import select
import signal
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h3wire  # noqa: E402
from aioquic.h3 import events as h3ev  # noqa: E402
from aioquic.quic.connection import MAX_STREAM_DATA_FRAME_CAPACITY  # noqa: E402
from aioquic.quic.logger import QuicLogger  # noqa: E402
from aioquic.quic.packet import QuicFrameType  # noqa: E402


class Client:
    """One connection and what came back on its request streams."""

    def __init__(self, args):
        cfg = h3wire.configuration(
            types.SimpleNamespace(
                authority=args.authority,
                insecure=args.cafile is None,
                cafile=args.cafile,
                alpn="h3",
            )
        )
        cfg.idle_timeout = 600.0
        if getattr(args, "window", None):
            cfg.max_stream_data = args.window
        if getattr(args, "logger", None):
            cfg.quic_logger = args.logger
        self.d = h3wire.Driver(("127.0.0.1", args.port), cfg)
        self.args = args
        self.status = {}
        self.done = set()
        self.d.on_h3_event = self.on

    def on(self, ev):
        if isinstance(ev, h3ev.HeadersReceived):
            for name, value in ev.headers:
                if name == b":status" and ev.stream_id not in self.status:
                    self.status[ev.stream_id] = int(value)
        if getattr(ev, "stream_ended", False):
            self.done.add(ev.stream_id)

    def request(self, method, path, headers=(), end=True):
        sid = self.d.quic.get_next_available_stream_id()
        fields = h3wire.request_fields(method, self.args.authority, path, headers)
        self.d.h3.send_headers(sid, fields, end_stream=end)
        self.d.flush()
        return sid

    def step(self):
        """Reads what arrived, runs the timers, sends what is due."""
        self.d._receive()
        self.d._dispatch()
        timer = self.d.quic.get_timer()
        if timer is not None and time.monotonic() >= timer:
            self.d.quic.handle_timer(now=time.monotonic())
            self.d._dispatch()
        self.d.flush()

    def close_info(self):
        return self.d.quic.close_info()


def pump(clients, seconds, until=lambda: False, ping=None):
    """Drives every client for `seconds` (or until `until()`), PINGing
    each every `ping` seconds when given."""
    end = time.monotonic() + seconds
    next_ping = time.monotonic()
    while time.monotonic() < end and not until():
        if ping is not None and time.monotonic() >= next_ping:
            for c in clients:
                if not c.d.quic.ended:
                    c.d.quic.send_ping(0)
            next_ping = time.monotonic() + ping
        for c in clients:
            c.d.flush()
        wait = max(0.0, min(end, next_ping if ping else end) - time.monotonic())
        for c in clients:
            timer = c.d.quic.get_timer()
            if timer is not None:
                wait = min(wait, max(0.0, timer - time.monotonic()))
        socks = [c.d.sock for c in clients if not c.d.quic.ended]
        if not socks:
            return until()
        select.select(socks, [], [], min(wait, 0.05))
        for c in clients:
            if not c.d.quic.ended:
                c.step()
    return until()


def connect(args, count=1):
    clients = [Client(args) for _ in range(count)]
    for c in clients:
        c.d.connect()
    pump(clients, 10, until=lambda: all(c.d.handshake or c.d.quic.ended for c in clients))
    return clients


def get_one(clients):
    """One GET / on each client; the statuses."""
    sids = [c.request("GET", "/") if c.d.handshake else None for c in clients]
    pump(
        clients,
        10,
        until=lambda: all(s in c.done or c.d.quic.ended for c, s in zip(clients, sids)),
    )
    return [c.status.get(s) for c, s in zip(clients, sids)]


def out(value, clients=()):
    """Prints the scenario's line, then closes its connections politely
    (a last acknowledgement out first, so no answer waits on one)."""
    print(json.dumps(value), flush=True)
    pump(list(clients), 0.1)
    for c in clients:
        c.d.close()


def hold(args):
    clients = connect(args, args.count)
    statuses = get_one(clients)
    out({"held": sum(1 for s in statuses if s is not None)})
    stdin_open = [True]

    def stdin_closed():
        readable, _, _ = select.select([sys.stdin], [], [], 0)
        if readable and not sys.stdin.readline():
            stdin_open[0] = False
        return not stdin_open[0]

    while not stdin_closed():
        pump(clients, 0.2, ping=0.5 if args.ping else None)
    closes = [c.close_info() for c in clients if c.close_info() is not None]
    out({"open": sum(1 for c in clients if not c.d.quic.ended), "closes": closes}, clients)


def ping(args):
    (c,) = connect(args)
    (status,) = get_one([c])
    pump([c], args.seconds, until=lambda: c.d.quic.ended, ping=0.25)
    out({"answered": status, "close": c.close_info()}, [c])


def partial_headers(args):
    (c,) = connect(args)
    (status,) = get_one([c])
    q = c.d.quic
    sid = q.get_next_available_stream_id()
    fields = h3wire.request_fields("GET", args.authority, "/")
    whole = h3wire.frame(h3wire.HEADERS, h3wire.encode_fields(fields))
    q.send_stream_data(sid, whole[:3], end_stream=False)
    pump([c], args.seconds, until=lambda: sid in c.d.resets or q.ended, ping=0.25)
    out({"answered": status, "reset": c.d.resets.get(sid), "close": c.close_info()}, [c])


def upgrade_download(args):
    (c,) = connect(args)
    sid = c.request("GET", args.path)
    got = [0]
    ended = [False]

    def count(ev):
        c.on(ev)
        if isinstance(ev, h3ev.DataReceived):
            got[0] += len(ev.data)
            ended[0] |= ev.stream_ended

    c.d.on_h3_event = count
    pump([c], 10, until=lambda: got[0] >= 4 << 20 or c.d.quic.ended)
    os.kill(args.pid, signal.SIGUSR2)
    pump([c], args.seconds, until=lambda: c.d.quic.ended or sid in c.d.resets or ended[0])
    out(
        {
            "received": got[0],
            "ended": ended[0],
            "close": c.close_info(),
            "reset": c.d.resets.get(sid),
        },
        [c],
    )


class SlidingQuic(h3wire.ClientQuic):
    """A connection whose request streams' credit slides: never more than
    `window` octets past what arrived (aioquic doubles it instead)."""

    window = 1 << 20

    def _write_stream_limits(self, builder, space, stream):
        if stream.stream_id % 4 == 0 and stream.max_stream_data_local:
            want = stream.receiver.highest_offset + self.window
            if want - stream.max_stream_data_local >= self.window // 4:
                stream.max_stream_data_local = want
            if stream.max_stream_data_local_sent != stream.max_stream_data_local:
                buf = builder.start_frame(
                    QuicFrameType.MAX_STREAM_DATA,
                    capacity=MAX_STREAM_DATA_FRAME_CAPACITY,
                    handler=self._on_max_stream_data_delivery,
                    handler_args=(stream,),
                )
                buf.push_uint_var(stream.stream_id)
                buf.push_uint_var(stream.max_stream_data_local)
                stream.max_stream_data_local_sent = stream.max_stream_data_local
            return
        super()._write_stream_limits(builder, space, stream)


def gaps(args):
    h3wire.ClientQuic = SlidingQuic
    args.window = SlidingQuic.window
    args.logger = QuicLogger()
    (c,) = connect(args)
    sid = c.request("GET", args.path)
    got = [0]

    def count(ev):
        c.on(ev)
        if isinstance(ev, h3ev.DataReceived):
            got[0] += len(ev.data)

    c.d.on_h3_event = count
    pump([c], 60, until=lambda: sid in c.done or c.d.quic.ended)
    events = args.logger.to_dict()["traces"][0]["events"]
    numbers = sorted(
        {
            e["data"]["header"]["packet_number"]
            for e in events
            if e["name"] == "transport:packet_received"
            and e["data"]["header"].get("packet_type") == "1RTT"
        }
    )
    runs = sorted((b - a - 1 for a, b in zip(numbers, numbers[1:]) if b - a > 1), reverse=True)
    missing = numbers[-1] - numbers[0] + 1 - len(numbers) if numbers else 0
    out({"received": got[0], "packets": len(numbers), "missing": missing, "gaps": runs}, [c])


def paused_upload(args):
    (c,) = connect(args)
    sid = c.request("PUT", args.path, [("content-length", "20000")], end=False)
    c.d.h3.send_data(sid, b"a" * 10000, end_stream=False)
    pump([c], args.pause, until=lambda: c.d.quic.ended)
    if not c.d.quic.ended:
        c.d.h3.send_data(sid, b"b" * 10000, end_stream=True)
        pump([c], 10, until=lambda: sid in c.done or sid in c.d.resets or c.d.quic.ended)
    out({"status": c.status.get(sid), "close": c.close_info()}, [c])


def main():
    p = argparse.ArgumentParser()
    p.add_argument(
        "mode",
        choices=["hold", "ping", "partial-headers", "paused-upload", "upgrade-download", "gaps"],
    )
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--authority", default="localhost")
    p.add_argument("--cafile")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--ping", action="store_true")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--path", default="/upload")
    p.add_argument("--pause", type=float, default=0.5)
    p.add_argument("--pid", type=int)
    args = p.parse_args()
    {
        "hold": hold,
        "ping": ping,
        "partial-headers": partial_headers,
        "paused-upload": paused_upload,
        "upgrade-download": upgrade_download,
        "gaps": gaps,
    }[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
