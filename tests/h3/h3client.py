#!/usr/bin/env python3
"""A scripted HTTP/3 client for the tests of issue #47: exact answers (the
equality client) and attack primitives against a server on 127.0.0.1.
Python 3 with PyPI `aioquic` (which brings pylsqpack) only; the QUIC
connection is driven by our own select() loop (tests/h3/h3wire.py), the
attacks are in tests/h3/h3attacks.py (HTTP/3 layer) and
tests/h3/quicattacks.py (QUIC layer).

GET MODE (the default mode word is `get`)

    h3client.py [get] --connect 127.0.0.1:PORT --authority localhost \
        --cafile CERT.pem [--insecure] [--timeout 10] [--alpn h3] [--serial] \
        [--bodies] [--body-chunks N [--chunk-pause 0.2]] \
        [--early-data | --force-early-data] \
        [REQUEST_JSON ...]  < requests.jsonl

Each request is one JSON object, given as an argument or (when none is) as
one line of stdin:

    {"method": "GET", "path": "/x", "headers": [["range", "bytes=0-9"]],
     "body_b64": "..."}

optional keys: "authority" and "scheme" (defaults: --authority, "https");
"raw_headers": [[name, value], ...] replaces the whole field section
(pseudo-headers included) with exactly that list, for malformed requests.
Header names and values are sent exactly as given (no lowercasing, no
content-length added). The answer to a HEAD is not checked against its
content-length (aioquic would close the connection: see BodilessStream).

All requests go on ONE QUIC connection, opened all at once (aioquic waits
for stream credit when the server grants fewer), or one after the other
with --serial. A body is sent in one DATA frame, or in N DATA frames
--chunk-pause seconds apart with --body-chunks N. --timeout bounds the
whole run. Output: one JSON line per request on stdout, in input order:

    {"stream_id": 0, "status": 200,
     "headers": [["content-type", "text/plain"], ...],
     "body_len": 10, "sha256": "<hex of the body>",
     "body_b64": "..."                  (only with --bodies)
     "informational": [{"status": 103, "headers": [...]}]   (when any)
     "trailers": [[name, value], ...]   (when a trailing HEADERS came)
     "stop_sending": 256                (when the server sent STOP_SENDING)
     "error": "stream reset 0x10c H3_REQUEST_CANCELLED"
              | "connection closed by server: application 0x105 ..."
              | "timeout" | "handshake failed: ...",
     "error_code": 268                  (with a reset or a close)
     "early_data": {"ticket": true, "ticket_allows": true,
                    "offered": true, "zero_rtt_packets": 2,
                    "request_bytes_0rtt": 40, "accepted": false}
                         (only with --early-data or --force-early-data)}

"headers" are the response's fields exactly as received and in order, less
the ":status" pseudo-header; names and values are latin-1 decoded (one
character per byte). On stderr: `alpn: h3` (the negotiated ALPN) and how the
connection ended. Exit status 0 if the connection handshook, 1 otherwise.

--early-data: a first connection fetches a session ticket (and is closed),
the second offers 0-RTT with it and sends the requests before its handshake
completes; "early_data" says whether a ticket came, whether it allowed
early data ("ticket_allows": it carried the early_data extension with
max_early_data_size 0xffffffff, RFC 9001 §4.6.1), whether 0-RTT was offered
(the early_data extension in the ClientHello), how many 0-RTT packets went
out and how many bytes of the request streams they carried (sent before
anything came back), and whether the server accepted them. --force-early-data offers 0-RTT
even with a ticket that does not allow it (its max_early_data_size is set
to 0xffffffff before use), as a client that ignores the ticket would.
Rejected early data is resent by aioquic in 1-RTT, so the requests are
answered either way.

ATTACK MODE

    h3client.py attack NAME --connect 127.0.0.1:PORT --authority localhost \
        --cafile CERT.pem [--insecure] [--timeout 8] [--path /] [options]

prints one JSON line: {"attack": NAME, "handshake": bool, "alpn": ...,
"close": CLOSE or null, "counters": {sent/received bytes and datagrams,
"icmp_unreachable"}, "matched": bool (the server reacted as expected),
"expected": "...", plus the attack's own keys}, where CLOSE is
{"by": "server"|"client", "kind": "transport"|"application", "code": 261,
"code_hex": "0x105", "name": "H3_FRAME_UNEXPECTED", "reason": "...",
"frame_type": ..., "also_sent": [CLOSE] when a transport APPLICATION_ERROR
came first in the same datagram}. "icmp_unreachable" > 0 means nothing listened any more
(the server died); initial-flood, which has no connection, has its own
shape. Each attack ends within --timeout (default 8 s). Exit
status 0 when the attack ran (whatever the server did), 2 on a usage error.
`h3client.py attack --list` lists the names. Each attack's own keys and
options are described in tests/h3/h3attacks.py and quicattacks.py.
"""

import argparse
import base64
import hashlib
import json
import sys
import time

import h3attacks
import h3wire
import quicattacks  # noqa: F401 (registers the QUIC-layer attacks)
from aioquic.h3 import events as h3ev
from aioquic.h3.connection import H3Stream
from aioquic.quic import events as qev


class BodilessStream(H3Stream):
    """A request stream whose answer has no content whatever its
    content-length says: the answer to a HEAD (RFC 9110 §9.3.2, §8.6).

    aioquic 1.7 reads a response's content-length into its stream state
    (`H3Stream.expected_content_length`, set in `validate_headers`) and, at
    the stream's end, closes the connection with H3_MESSAGE_ERROR when the
    DATA received disagrees (`H3Connection._check_content_length`), HEAD or
    not: a HEAD answered `content-length: 10` with no DATA, as it must be,
    would kill the connection. A HEAD's stream gets this class at run time
    (after `send_headers` made its state), whose `expected_content_length`
    always reads None, so aioquic's check never applies to it; every other
    stream is still checked."""

    @property
    def expected_content_length(self):
        return None

    @expected_content_length.setter
    def expected_content_length(self, value):
        pass


class Request:
    """One request of get mode and what came back for it."""

    def __init__(self, spec):
        self.spec = spec
        self.body = base64.b64decode(spec.get("body_b64", "") or "")
        self.stream_id = None
        self.status = None
        self.headers = None
        self.informational = []
        self.trailers = None
        self.digest = hashlib.sha256()
        self.body_len = 0
        self.received = bytearray()
        self.done = False
        self.error = None
        self.error_code = None

    def fields(self, args):
        if "raw_headers" in self.spec:
            return [(h3wire.to_bytes(n), h3wire.to_bytes(v)) for n, v in self.spec["raw_headers"]]
        return h3wire.request_fields(
            self.spec.get("method", "GET"),
            self.spec.get("authority", args.authority),
            self.spec.get("path", "/"),
            self.spec.get("headers", []),
            self.spec.get("scheme", "https"),
        )

    def method(self):
        """The request's method as sent (from raw_headers when given)."""
        if "raw_headers" in self.spec:
            found = [v for n, v in self.spec["raw_headers"] if n == ":method"]
            return h3wire.to_bytes(found[0]) if found else None
        return h3wire.to_bytes(self.spec.get("method", "GET"))

    def fail(self, error, code=None):
        if not self.done:
            self.done = True
            self.error = error
            self.error_code = code

    def result(self, args, stop_sending, early):
        out = {
            "stream_id": self.stream_id,
            "status": self.status,
            "headers": self.headers,
            "body_len": self.body_len,
            "sha256": self.digest.hexdigest(),
        }
        if args.bodies:
            out["body_b64"] = base64.b64encode(bytes(self.received)).decode()
        if self.informational:
            out["informational"] = self.informational
        if self.trailers is not None:
            out["trailers"] = self.trailers
        if self.stream_id in stop_sending:
            out["stop_sending"] = stop_sending[self.stream_id]
        if self.error is not None:
            out["error"] = self.error
            if self.error_code is not None:
                out["error_code"] = self.error_code
        if early is not None:
            out["early_data"] = early
        return out


def describe_close(info):
    return (
        f"connection closed by {info['by']}: {info['kind']} {info['code_hex']} "
        f"{info['name']} {info['reason']}".rstrip()
    )


def fetch_ticket(args, addr, deadline):
    """--early-data's first connection: returns the session ticket it got."""
    tickets = []
    d = h3wire.Driver(addr, h3wire.configuration(args), session_ticket_handler=tickets.append)
    d.connect()
    d.pump(lambda: d.handshake and tickets, timeout=h3wire.remaining(deadline))
    d.close()
    return tickets[-1] if tickets else None


def run_get(args, specs):
    addr = h3wire.parse_hostport(args.connect)
    deadline = time.monotonic() + args.timeout
    requests = [Request(s) for s in specs]
    early = None
    cfg = h3wire.configuration(args)
    if args.early_data or args.force_early_data:
        ticket = fetch_ticket(args, addr, deadline)
        allows = ticket is not None and ticket.max_early_data_size is not None
        if ticket is not None and args.force_early_data:
            ticket.max_early_data_size = 0xFFFFFFFF
        early = {
            "ticket": ticket is not None,
            "ticket_allows": allows,
            "offered": ticket is not None and ticket.max_early_data_size is not None,
            "zero_rtt_packets": 0,
            "accepted": None,
        }
        cfg.session_ticket = ticket

    d = h3wire.Driver(addr, cfg)
    by_stream = {}
    timers = []  # [due, request, chunk, last]

    def on_h3(ev):
        req = by_stream.get(getattr(ev, "stream_id", None))
        if req is None or req.done:
            return
        if isinstance(ev, h3ev.HeadersReceived):
            fields = [[h3wire.text(n), h3wire.text(v)] for n, v in ev.headers]
            status = next((int(v) for n, v in fields if n == ":status"), None)
            regular = [f for f in fields if f[0] != ":status"]
            if req.status is None and status is not None and 100 <= status < 200:
                req.informational.append({"status": status, "headers": regular})
            elif req.status is None:
                req.status, req.headers = status, regular
            else:
                req.trailers = fields
        elif isinstance(ev, h3ev.DataReceived):
            req.digest.update(ev.data)
            req.body_len += len(ev.data)
            if args.bodies:
                req.received += ev.data
        else:
            return
        if ev.stream_ended:
            req.done = True

    def on_quic(ev):
        if isinstance(ev, qev.StreamReset) and ev.stream_id in by_stream:
            name = h3wire.error_name(ev.error_code, True)
            by_stream[ev.stream_id].fail(f"stream reset {hex(ev.error_code)} {name}", ev.error_code)

    def start(req):
        sid = h3wire.new_stream(d.quic)
        req.stream_id = sid
        by_stream[sid] = req
        body = req.body
        d.h3.send_headers(sid, req.fields(args), end_stream=not body)
        if req.method() == b"HEAD":
            d.h3._stream[sid].__class__ = BodilessStream
        if not body:
            return
        n = max(1, min(args.body_chunks, len(body)))
        size = -(-len(body) // n)
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        d.h3.send_data(sid, chunks[0], end_stream=len(chunks) == 1)
        now = time.monotonic()
        for k, chunk in enumerate(chunks[1:], 1):
            timers.append([now + k * args.chunk_pause, req, chunk, k == len(chunks) - 1])

    d.on_h3_event = on_h3
    d.on_quic_event = on_quic
    d.connect()
    queue = list(requests)
    while queue and not args.serial:
        start(queue.pop(0))
    if queue:
        start(queue.pop(0))
    d.flush()
    if early is not None:
        # Nothing came back yet: the request bytes sent so far went out in
        # 0-RTT packets, the only application keys there are.
        early["request_bytes_0rtt"] = sum(
            s.sender.highest_offset for sid, s in d.quic._streams.items() if sid in by_stream
        )

    while True:
        if queue and all(r.done for r in requests if r.stream_id is not None):
            start(queue.pop(0))
            d.flush()
        if all(r.done for r in requests) and not timers:
            break
        now = time.monotonic()
        due = [t for t in timers if t[0] <= now]
        for t in due:
            timers.remove(t)
            if not t[1].done:
                d.h3.send_data(t[1].stream_id, t[2], end_stream=t[3])
        if due:
            d.flush()
        if now >= deadline:
            break
        wake = min([deadline] + [t[0] for t in timers])

        def ready():
            if d.quic.ended or any(t[0] <= time.monotonic() for t in timers):
                return True
            started = [r for r in requests if r.stream_id is not None]
            return all(r.done for r in started) and (queue or all(r.done for r in requests))

        d.pump(ready, timeout=wake - now)
        if d.quic.ended:
            d.pump(timeout=0)
            break

    close = d.quic.close_info()
    for r in requests:
        if not d.handshake:
            reason = describe_close(close) if close else "no answer"
            if d.unreachable:
                reason += " (ICMP port unreachable: nothing listens)"
            r.fail(f"handshake failed: {reason}", close and close["code"])
        elif close is not None:
            r.fail(describe_close(close), close["code"])
        else:
            r.fail("timeout")
    if early is not None:
        early["accepted"] = d.early_data_accepted
        early["zero_rtt_packets"] = d.sent_zero_rtt
    print(f"alpn: {d.alpn}", file=sys.stderr)
    if close is not None:
        print(describe_close(close), file=sys.stderr)
    d.close()
    for r in requests:
        print(json.dumps(r.result(args, d.stop_sending, early)))
    sys.stdout.flush()
    return 0 if d.handshake else 1


def parser():
    p = argparse.ArgumentParser(
        description="Scripted HTTP/3 client (aioquic): get mode and attacks.",
        epilog="See the header of tests/h3/h3client.py for the JSON shapes.",
    )
    p.add_argument("words", nargs="*", help="[get] [REQUEST_JSON ...] | attack NAME")
    p.add_argument("--connect", help="the server's UDP address, HOST:PORT")
    p.add_argument("--authority", default="localhost", help="SNI and :authority")
    p.add_argument("--cafile", help="PEM file of the CA (or self-signed cert) to trust")
    p.add_argument("--insecure", action="store_true", help="verify no certificate")
    p.add_argument("--timeout", type=float, help="seconds (get: 10, attack: 8)")
    p.add_argument("--alpn", default="h3")
    p.add_argument("--list", action="store_true", help="list the attacks")
    g = p.add_argument_group("get mode")
    g.add_argument("--serial", action="store_true", help="one request after the other")
    g.add_argument("--bodies", action="store_true", help="add body_b64 to each line")
    g.add_argument("--body-chunks", type=int, default=1, help="DATA frames per request body")
    g.add_argument("--chunk-pause", type=float, default=0.2, help="seconds between them")
    g.add_argument("--early-data", action="store_true", help="offer 0-RTT (second connection)")
    g.add_argument(
        "--force-early-data",
        action="store_true",
        help="offer 0-RTT even when the ticket does not allow it",
    )
    h3attacks.add_options(p.add_argument_group("attack mode"))
    return p


def main():
    p = parser()
    args = p.parse_intermixed_args()
    words = args.words
    if args.list or words[:1] == ["attack"] and len(words) == 1:
        print("\n".join(sorted(h3attacks.ATTACKS)))
        return 0
    if not args.connect:
        p.error("--connect HOST:PORT is required")
    if not args.insecure and not args.cafile:
        p.error("give --cafile CERT.pem or --insecure")
    if words[:1] == ["attack"]:
        if len(words) != 2 or words[1] not in h3attacks.ATTACKS:
            p.error(f"attack NAME, one of: {', '.join(sorted(h3attacks.ATTACKS))}")
        if args.timeout is None:
            args.timeout = 8.0
        print(json.dumps(h3attacks.run(words[1], args)))
        sys.stdout.flush()
        return 0
    if words[:1] == ["get"]:
        words = words[1:]
    if args.timeout is None:
        args.timeout = 10.0
    lines = words if words else [line for line in sys.stdin if line.strip()]
    try:
        specs = [json.loads(line) for line in lines]
    except json.JSONDecodeError as e:
        p.error(f"a request is not JSON: {e}")
    return run_get(args, specs)


if __name__ == "__main__":
    sys.exit(main())
