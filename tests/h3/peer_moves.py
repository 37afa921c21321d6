#!/usr/bin/env python3
"""Two requests on one QUIC connection with a move between them, for the
test that per-address decisions see the client's current address
(tests/tests/h3_workers/moves.rs): aioquic on tests/h3/mover.py's Mover.

    peer_moves.py --connect 127.0.0.1:PORT --cafile CA.pem --path /peer

GETs --path, moves to a new source port (mover.py's move: a new UDP
socket, a PING), GETs --path again. Output: one JSON line,
{"ports": [first, second], "bodies": [first body, second body]}, the bodies
as text. Exit status 0 when both answers came.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h3wire  # noqa: E402
import mover  # noqa: E402
from aioquic.h3 import events as h3ev  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402


def get(d, path, authority):
    sid = h3wire.new_stream(d.quic)
    body = bytearray()
    done = [False]

    def on_h3(ev):
        if isinstance(ev, h3ev.DataReceived) and ev.stream_id == sid:
            body.extend(ev.data)
        if getattr(ev, "stream_id", None) == sid and getattr(ev, "stream_ended", False):
            done[0] = True

    d.on_h3_event = on_h3
    fields = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", authority.encode()),
        (b":path", path.encode()),
    ]
    d.h3.send_headers(sid, fields, end_stream=True)
    d.flush()
    d.pump(lambda: done[0] or d.quic.ended, timeout=10)
    return bytes(body).decode("latin-1") if done[0] else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--connect", required=True)
    p.add_argument("--cafile", required=True)
    p.add_argument("--authority", default="localhost")
    p.add_argument("--path", required=True)
    args = p.parse_args()
    cfg = QuicConfiguration(is_client=True, alpn_protocols=["h3"], server_name=args.authority)
    cfg.load_verify_locations(cafile=args.cafile)
    d = mover.Mover(h3wire.parse_hostport(args.connect), cfg)
    d.connect()
    d.pump(lambda: d.handshake or d.quic.ended, timeout=10)
    first = get(d, args.path, args.authority)
    d.move(False)
    second = get(d, args.path, args.authority)
    print(json.dumps({"ports": d.ports, "bodies": [first, second]}), flush=True)
    d.close()
    return 0 if first is not None and second is not None else 1


if __name__ == "__main__":
    sys.exit(main())
