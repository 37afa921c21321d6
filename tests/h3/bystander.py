#!/usr/bin/env python3
"""A well-behaved HTTP/3 connection that lives across an attack, for
tests/tests/h3_attacks.rs: it shows that the server closed only the
offending connection.

    bystander.py --connect 127.0.0.1:PORT --cafile CERT.pem \
        [--authority localhost] [--path /]

Opens one connection and GETs --path on it, then, for each line read on
stdin, GETs --path again on the SAME connection; at the end of stdin it
closes the connection politely and exits. Meanwhile the connection is kept
moving (acknowledgements, timers). One JSON line on stdout per GET:

    {"status": 200, "body_len": 6, "sha256": "<hex>", "reset": null,
     "close": null | CLOSE (as h3client.py's attack mode prints it)}

Python 3 with PyPI `aioquic`, through tests/h3/h3wire.py.
"""

import argparse
import hashlib
import json
import select
import sys
import time

import h3wire
from aioquic.h3 import events as h3ev


def main():
    p = argparse.ArgumentParser(description="An HTTP/3 connection kept across an attack.")
    p.add_argument("--connect", required=True)
    p.add_argument("--cafile", required=True)
    p.add_argument("--authority", default="localhost")
    p.add_argument("--path", default="/")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per GET")
    args = p.parse_args()
    args.insecure = False
    args.alpn = "h3"

    d = h3wire.Driver(h3wire.parse_hostport(args.connect), h3wire.configuration(args))
    answers = {}

    def on_h3(ev):
        a = answers.get(getattr(ev, "stream_id", None))
        if a is None:
            return
        if isinstance(ev, h3ev.HeadersReceived) and a["status"] is None:
            status = dict(ev.headers).get(b":status")
            if status is not None and not status.startswith(b"1"):
                a["status"] = int(status)
        elif isinstance(ev, h3ev.DataReceived):
            a["digest"].update(ev.data)
            a["body_len"] += len(ev.data)
        if getattr(ev, "stream_ended", False):
            a["done"] = True

    d.on_h3_event = on_h3
    d.connect()

    def one_get():
        if d.handshake and not d.quic.ended and d.quic.peer_close is None:
            sid = h3wire.new_stream(d.quic)
            a = {"status": None, "body_len": 0, "digest": hashlib.sha256(), "done": False}
            answers[sid] = a
            fields = h3wire.request_fields("GET", args.authority, args.path)
            d.h3.send_headers(sid, fields, end_stream=True)
            d.flush()
            d.pump(
                lambda: a["done"] or sid in d.resets or d.quic.peer_close is not None,
                timeout=args.timeout,
            )
            reset = d.resets.get(sid)
        else:
            a = {"status": None, "body_len": 0, "digest": hashlib.sha256()}
            reset = None
        print(
            json.dumps(
                {
                    "status": a["status"],
                    "body_len": a["body_len"],
                    "sha256": a["digest"].hexdigest(),
                    "reset": reset,
                    "close": d.quic.close_info(),
                }
            ),
            flush=True,
        )

    d.pump(lambda: d.handshake or d.quic.ended, timeout=args.timeout)
    one_get()
    while True:
        # The connection moves on while we wait for the next line.
        d.pump(timeout=0.05)
        readable, _, _ = select.select([sys.stdin], [], [], 0.05)
        if not readable:
            continue
        line = sys.stdin.readline()
        if not line:
            break
        one_get()
    d.close()
    time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())
