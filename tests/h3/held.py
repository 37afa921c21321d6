#!/usr/bin/env python3
"""One HTTP/3 download held part-way by flow control, for the tests of
issue #48 (nikaia_cli/tests/h3_upgrade.rs): the client grants the server a
small stream window and raises it only once the file named by --hold is
gone, so the download spans whatever the test does meanwhile (an upgrade,
a reload) by construction, not by timing.

    held.py --connect 127.0.0.1:PORT --cafile CERT.pem --path /big \\
        --hold FILE [--window 65536] [--timeout 60]

Prints `held` (one line) once the server has filled the window, then,
after FILE is removed, one JSON line: {"status": 200, "body_len": N,
"sha256": "...", "error": null, "stateless_reset": false}. "stateless_reset" says whether a datagram ended with one
of the server's stateless reset tokens (RFC 9000 §10.3.1). Exit status 0
when the answer came whole.
"""

import argparse
import hashlib
import json
import os
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h3wire  # noqa: E402
from aioquic.h3 import events as h3ev  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402


class HeldQuic(h3wire.ClientQuic):
    """Raises no flow-control limit while `held()`; notes stateless resets."""

    held = staticmethod(lambda: False)
    stateless_reset = False

    def _write_stream_limits(self, builder, space, stream):
        if not self.held():
            super()._write_stream_limits(builder, space, stream)

    def _write_connection_limits(self, builder, space):
        if not self.held():
            super()._write_connection_limits(builder, space)

    def receive_datagram(self, data, addr, now):
        tokens = [c.stateless_reset_token for c in self._peer_cid_available]
        tokens.append(self._peer_cid.stateless_reset_token)
        if len(data) >= 21 and not data[0] & 0x80 and data[-16:] in tokens:
            HeldQuic.stateless_reset = True
        return super().receive_datagram(data, addr, now)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--connect", required=True)
    p.add_argument("--cafile", required=True)
    p.add_argument("--authority", default="localhost")
    p.add_argument("--path", required=True)
    p.add_argument("--hold", required=True)
    p.add_argument("--window", type=int, default=64 << 10)
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()

    cfg = QuicConfiguration(
        is_client=True,
        alpn_protocols=["h3"],
        server_name=args.authority,
        idle_timeout=30.0,
        max_data=4 * args.window,
        max_stream_data=args.window,
    )
    if args.cafile == "-":
        cfg.verify_mode = ssl.CERT_NONE
    else:
        cfg.load_verify_locations(cafile=args.cafile)
    h3wire.ClientQuic = HeldQuic
    HeldQuic.held = staticmethod(lambda: os.path.exists(args.hold))
    d = h3wire.Driver(h3wire.parse_hostport(args.connect), cfg)
    state = {"status": None, "len": 0, "done": False}
    digest = hashlib.sha256()

    def on_h3(ev):
        if isinstance(ev, h3ev.HeadersReceived):
            for n, v in ev.headers:
                if n == b":status":
                    state["status"] = int(v)
        elif isinstance(ev, h3ev.DataReceived):
            digest.update(ev.data)
            state["len"] += len(ev.data)
        if getattr(ev, "stream_ended", False):
            state["done"] = True

    d.on_h3_event = on_h3
    d.connect()
    sid = h3wire.new_stream(d.quic)
    fields = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", args.authority.encode()),
        (b":path", args.path.encode()),
    ]
    d.h3.send_headers(sid, fields, end_stream=True)
    d.flush()
    deadline = time.monotonic() + args.timeout
    # The window filled: the server waits for credit it does not get.
    d.pump(
        lambda: state["len"] >= args.window // 2 or d.quic.ended,
        timeout=deadline - time.monotonic(),
    )
    if state["len"] >= args.window // 2:
        print("held", flush=True)
    else:
        print(f"not held: {state['len']} octets, {d.quic.close_info()}", flush=True)
    # pump() checks its condition only when the socket or a timer wakes
    # it: look at the file every 20 ms.
    while os.path.exists(args.hold) and time.monotonic() < deadline and not d.quic.ended:
        d.pump(timeout=0.02)
    # Released: the raised limits go out now (nothing else would send).
    d.flush()
    d.pump(lambda: state["done"] or d.quic.ended, timeout=deadline - time.monotonic())
    close = d.quic.close_info()
    error = None
    if not state["done"]:
        error = h3wire_describe(close) if close else "timeout"
    print(
        json.dumps(
            {
                "status": state["status"],
                "body_len": state["len"],
                "sha256": digest.hexdigest(),
                "error": error,
                "stateless_reset": HeldQuic.stateless_reset,
            }
        ),
        flush=True,
    )
    d.close()
    return 0 if state["done"] else 1


def h3wire_describe(close):
    return f"connection closed: {close}"


if __name__ == "__main__":
    sys.exit(main())
