"""The attack primitives of tests/h3/h3client.py (`h3client.py attack NAME`).

Each builds its misbehaviour from aioquic's QuicConnection and hand-built
HTTP/3 frames (tests/h3/h3wire.py) and returns one dict, printed as a JSON
line, with the common keys described in h3client.py and these of its own.
"alive" (where given) is true when the server still acknowledged a PING on
the attacking connection at the end (or closed it) and no ICMP port
unreachable came back. The last second of --timeout is kept for that probe.

unknown-frame [--frame-type 0x21] [--on request|control] [--size 32]
    A frame of an unknown/reserved type (default 0x21, the first grease
    type), then a valid GET --path on the same request stream (or the
    unknown frame on our control stream). Keys: frame_type, on, status,
    body_len, reset. Expected: answered, no close.
second-control [--stream-type control|encoder|decoder]
    A second unidirectional stream of that type (a control one carries an
    empty SETTINGS). Our connection opens only the streams the attack needs
    (control, plus the QPACK stream being doubled), so it fits in a credit
    of 3 unidirectional streams. Keys: stream_type, stream_id, uni_credit,
    blocked (true: the credit did not let the stream out, the server never
    saw it). Expected: connection close H3_STREAM_CREATION_ERROR 0x103.
close-qpack-encoder [--stream-type encoder|decoder|control] [--reset]
    Our QPACK encoder stream (or the one named) ended with a FIN, or with
    RESET_STREAM under --reset. Keys: stream_type, stream_id, ended_by,
    uni_credit, blocked. Expected: connection close
    H3_CLOSED_CRITICAL_STREAM 0x104.
data-before-headers
    A DATA frame as the first frame of a request stream. Keys: stream_id,
    reset. Expected: connection close H3_FRAME_UNEXPECTED 0x105.
header-bomb [--lines 1000] [--line-size 1024] [--static N]
    One HEADERS frame of a GET whose field section decodes to `decoded_size`
    bytes (name + value + 32 per line): --lines literal lines of --line-size
    bytes each, or with --static N, N one-byte references to the static
    table's entry 31 ("accept-encoding: gzip, deflate, br", 64 decoded bytes
    per byte sent). Keys: lines, frame_bytes, decoded_size, status, reset,
    stop_sending, followup (a GET on the same connection afterwards, if it
    is still open), alive. Expected: 431, a stream reset or a connection
    close, and the server alive.
reset-flood [--count 500]
    --count requests (complete GETs of --path), each reset (RESET_STREAM and
    STOP_SENDING, H3_REQUEST_CANCELLED) right after its HEADERS went out, as
    fast as stream credit allows. Keys: requested, opened, answered,
    server_resets, credit_initial, credit_final, outcome ("closed", "all" =
    every stream opened and the connection open, "stalled" = credit stopped
    coming), followup. Expected: close H3_EXCESSIVE_LOAD 0x107, or all.
stream-open-flood [--uni] [--partial] [--wait 3]
    As many bidirectional (or with --uni, unidirectional) streams as the
    credit allows, each opened by an empty STREAM frame (or, --partial, one
    byte: a HEADERS frame type / a reserved stream type) and then left
    silent for --wait seconds. Keys: allowed (streams the credit let us
    open; for --uni less the 3 of HTTP/3), opened, credit_after (credit once
    the wait is over), server_resets, server_stop_sending, alive. Expected:
    the credit bounded, the server alive.

The QUIC-layer attacks (connection IDs, PATH_CHALLENGE, ACKs, Initials,
transport parameters) are in tests/h3/quicattacks.py.
"""

import collections
import os
import time

import h3wire
from aioquic.h3 import events as h3ev
from h3wire import frame, remaining, varint

ATTACKS = {}


def attack(name):
    def register(fn):
        ATTACKS[name] = fn
        return fn

    return register


def add_options(g):
    g.add_argument("--path", default="/", help="the path the attacks request")
    g.add_argument("--count", type=int, help="how many (frames, streams, Initials)")
    g.add_argument("--wait", type=float, help="seconds to watch after the attack (3)")
    g.add_argument("--frame-type", type=lambda s: int(s, 0), help="unknown-frame's type")
    g.add_argument("--on", choices=["request", "control"], default="request")
    g.add_argument("--size", type=int, default=32, help="unknown-frame's payload bytes")
    g.add_argument("--stream-type", choices=["control", "encoder", "decoder"])
    g.add_argument("--reset", action="store_true", help="RESET_STREAM instead of FIN")
    g.add_argument("--lines", type=int, default=1000, help="header-bomb's lines")
    g.add_argument("--line-size", type=int, default=1024, help="header-bomb's value bytes")
    g.add_argument("--static", type=int, default=0, help="header-bomb: N static refs")
    g.add_argument("--uni", action="store_true", help="stream-open-flood: uni streams")
    g.add_argument("--partial", action="store_true", help="stream-open-flood: one byte")
    g.add_argument("--retire-prior-to", choices=["zero", "advance"], default="zero")
    g.add_argument("--withhold-acks", action="store_true")
    g.add_argument("--acked-packets", type=int, default=10)
    g.add_argument("--sockets", type=int, default=1, help="initial-flood's source sockets")
    g.add_argument("--first-only", action="store_true", help="only the first datagram")
    g.add_argument(
        "--variant", choices=["cut", "len", "varint", "dup", "empty"], default="cut"
    )


def run(name, args):
    # The last second of --timeout is kept for the liveness probe (alive())
    # and the polite close.
    deadline = time.monotonic() + max(0.5, args.timeout - 1.0)
    out = ATTACKS[name](args, deadline)
    out.setdefault("attack", name)
    return out


# --- common parts ------------------------------------------------------------


class Responses:
    """What came back on each request stream of a Driver."""

    def __init__(self, d):
        self.d = d
        self.status = {}
        self.body = collections.Counter()
        self.ended = set()
        d.on_h3_event = self.on

    def on(self, ev):
        if isinstance(ev, h3ev.HeadersReceived):
            status = dict(ev.headers).get(b":status")
            if status and ev.stream_id not in self.status and not status.startswith(b"1"):
                self.status[ev.stream_id] = int(status)
        elif isinstance(ev, h3ev.DataReceived):
            self.body[ev.stream_id] += len(ev.data)
        else:
            return
        if ev.stream_ended:
            self.ended.add(ev.stream_id)

    def finished(self, sid):
        d = self.d
        return sid in self.ended or sid in d.resets or d.quic.ended or d.quic.peer_close is not None


def reset_info(d, sid):
    code = d.resets.get(sid)
    if code is None:
        return None
    return {"code": code, "code_hex": hex(code), "name": h3wire.error_name(code, True)}


def open_h3(args, deadline, **kwargs):
    """A connection that handshook (if the server let it), with the server's
    SETTINGS and HANDSHAKE_DONE received if they came within a second."""
    d = h3wire.Driver(h3wire.parse_hostport(args.connect), h3wire.configuration(args), **kwargs)
    d.connect()
    d.pump(lambda: d.handshake or d.quic.ended, timeout=remaining(deadline))
    if d.handshake:  # confirmed (HANDSHAKE_DONE), so closes come as 1-RTT frames
        d.pump(
            lambda: d.h3.received_settings is not None and d.quic._handshake_confirmed,
            timeout=min(1.0, remaining(deadline)),
        )
    return d


def report(d, **extra):
    out = {
        "handshake": d.handshake,
        "alpn": d.alpn,
        "close": d.quic.close_info(),
        "counters": d.counters(),
    }
    out.update(extra)
    return out


def get(d, args, path=None, end=True):
    """Sends a GET of `path` (default --path) on a new stream; returns its id."""
    sid = h3wire.new_stream(d.quic)
    fields = h3wire.request_fields("GET", args.authority, path or args.path)
    d.h3.send_headers(sid, fields, end_stream=end)
    d.flush()
    return sid


def followup(d, args, resp, deadline):
    """A GET on the same connection after an attack, if it is still open."""
    if d.quic.ended or d.quic.peer_close is not None or not d.handshake:
        return None
    sid = get(d, args)
    d.pump(lambda: resp.finished(sid), timeout=remaining(deadline))
    return {"status": resp.status.get(sid), "reset": reset_info(d, sid)}


def watch(d, deadline, args, until=lambda: False, default=3.0):
    """Runs the connection for --wait seconds (bounded by the deadline) or
    until the server closes it or `until()`."""
    wait = args.wait if args.wait is not None else default
    d.pump(
        lambda: d.quic.peer_close is not None or until(),
        timeout=min(wait, remaining(deadline)),
    )


def server_closed(d, code, kind="application"):
    c = d.quic.peer_close
    return c is not None and c["kind"] == kind and c["code"] == code


def alive(d):
    """The server still answers: no ICMP port unreachable came back, and on a
    connection still open, a PING is acknowledged within a second."""
    if d.handshake and not d.quic.ended and d.quic.peer_close is None:
        uid = 4700 + len(d.pings_acked)
        d.quic.send_ping(uid)
        d.flush()
        d.pump(lambda: uid in d.pings_acked or d.unreachable > 0, timeout=1.0)
        return uid in d.pings_acked and d.unreachable == 0
    return d.unreachable == 0


def finish(d, out):
    d.close()
    return out


def no_handshake(d, expected):
    return finish(d, report(d, matched=False, expected=expected))


# --- the attacks ---------------------------------------------------------------


@attack("unknown-frame")
def unknown_frame(args, deadline):
    expected = "answered, the unknown frame ignored, no close"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    resp = Responses(d)
    ftype = args.frame_type if args.frame_type is not None else h3wire.RESERVED_TYPE
    junk = frame(ftype, os.urandom(args.size))
    sid = h3wire.new_stream(d.quic)
    if args.on == "control":
        d.quic.send_stream_data(d.h3._local_control_stream_id, junk)
    else:
        d.quic.send_stream_data(sid, junk)
    fields = h3wire.request_fields("GET", args.authority, args.path)
    d.h3.send_headers(sid, fields, end_stream=True)
    d.flush()
    d.pump(lambda: resp.finished(sid), timeout=remaining(deadline))
    status = resp.status.get(sid)
    out = report(
        d,
        frame_type=ftype,
        on=args.on,
        status=status,
        body_len=resp.body[sid],
        reset=reset_info(d, sid),
        matched=status is not None and d.quic.close_info() is None,
        expected=expected,
    )
    return finish(d, out)


STREAM_TYPES = {
    "control": h3wire.CONTROL_STREAM,
    "encoder": h3wire.ENCODER_STREAM,
    "decoder": h3wire.DECODER_STREAM,
}


def uni_report(d, sid):
    """The unidirectional credit, and whether our extra stream had to wait
    for more of it (then the server never saw it: a credit of 3 is a
    defence too)."""
    stream = d.quic._streams.get(sid)
    return {
        "uni_credit": d.quic._remote_max_streams_uni,
        "blocked": bool(stream is not None and stream.is_blocked),
    }


@attack("second-control")
def second_control(args, deadline):
    expected = "connection close H3_STREAM_CREATION_ERROR 0x103"
    kind = args.stream_type or "control"
    # Our QPACK streams only as far as needed: control + the duplicated one.
    d = open_h3(args, deadline, qpack_streams=() if kind == "control" else (kind,))
    if not d.handshake:
        return no_handshake(d, expected)
    sid = d.quic.get_next_available_stream_id(is_unidirectional=True)
    payload = varint(STREAM_TYPES[kind])
    if kind == "control":
        payload += frame(h3wire.SETTINGS)
    d.quic.send_stream_data(sid, payload)
    d.flush()
    watch(d, deadline, args)
    out = report(
        d,
        stream_type=kind,
        stream_id=sid,
        **uni_report(d, sid),
        matched=server_closed(d, 0x103),
        expected=expected,
    )
    return finish(d, out)


@attack("close-qpack-encoder")
def close_qpack_encoder(args, deadline):
    expected = "connection close H3_CLOSED_CRITICAL_STREAM 0x104"
    kind = args.stream_type or "encoder"
    d = open_h3(args, deadline, qpack_streams=() if kind == "control" else (kind,))
    if not d.handshake:
        return no_handshake(d, expected)
    sid = {
        "control": d.h3._local_control_stream_id,
        "encoder": d.h3._local_encoder_stream_id,
        "decoder": d.h3._local_decoder_stream_id,
    }[kind]
    if args.reset:
        d.quic.reset_stream(sid, h3wire.H3_REQUEST_CANCELLED)
    else:
        d.quic.send_stream_data(sid, b"", end_stream=True)
    d.flush()
    watch(d, deadline, args)
    out = report(
        d,
        stream_type=kind,
        stream_id=sid,
        ended_by="reset" if args.reset else "fin",
        **uni_report(d, sid),
        matched=server_closed(d, 0x104),
        expected=expected,
    )
    return finish(d, out)


@attack("data-before-headers")
def data_before_headers(args, deadline):
    expected = "connection close H3_FRAME_UNEXPECTED 0x105"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    sid = h3wire.new_stream(d.quic)
    d.quic.send_stream_data(sid, frame(h3wire.DATA, b"abcd"), end_stream=True)
    d.flush()
    watch(d, deadline, args, until=lambda: sid in d.resets)
    if sid in d.resets:  # a stream error instead: see whether a close follows
        watch(d, deadline, args, default=0.5)
    out = report(
        d,
        stream_id=sid,
        reset=reset_info(d, sid),
        matched=server_closed(d, 0x105),
        expected=expected,
    )
    return finish(d, out)


@attack("header-bomb")
def header_bomb(args, deadline):
    expected = "431, a stream reset or a connection close; the server alive"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    resp = Responses(d)
    pseudo = h3wire.request_fields("GET", args.authority, args.path)
    lines = [h3wire.qpack_literal(n, v) for n, v in pseudo]
    decoded = sum(len(n) + len(v) + 32 for n, v in pseudo)
    if args.static:
        lines += [h3wire.qpack_static(31)] * args.static
        decoded += args.static * (len("accept-encoding") + len("gzip, deflate, br") + 32)
        count = args.static
    else:
        value = b"a" * args.line_size
        for i in range(args.lines):
            name = b"x-bomb-%d" % i
            lines.append(h3wire.qpack_literal(name, value))
            decoded += len(name) + len(value) + 32
        count = args.lines
    payload = frame(h3wire.HEADERS, h3wire.field_section(b"".join(lines)))
    sid = h3wire.new_stream(d.quic)
    d.quic.send_stream_data(sid, payload, end_stream=True)
    d.flush()
    d.pump(lambda: resp.finished(sid), timeout=remaining(deadline) - 1.0)
    status = resp.status.get(sid)
    after = followup(d, args, resp, deadline)
    refused = status == 431 or sid in d.resets or d.quic.peer_close is not None
    up = alive(d)
    out = report(
        d,
        alive=up,
        lines=count,
        frame_bytes=len(payload),
        decoded_size=decoded,
        status=status,
        reset=reset_info(d, sid),
        stop_sending=d.stop_sending.get(sid),
        followup=after,
        matched=refused and up,
        expected=expected,
    )
    return finish(d, out)


@attack("reset-flood")
def reset_flood(args, deadline):
    expected = "connection close H3_EXCESSIVE_LOAD 0x107, or every stream opened"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    resp = Responses(d)
    count = args.count or 500
    fields = h3wire.request_fields("GET", args.authority, args.path)
    credit_initial = d.quic._remote_max_streams_bidi
    sids = []
    # Keep a little time for the follow-up request.
    flood_deadline = deadline - min(1.0, args.timeout / 4)
    while len(sids) < count and d.quic.peer_close is None and not d.quic.ended:
        if remaining(flood_deadline) <= 0:
            break
        credit = d.quic._remote_max_streams_bidi
        batch = []
        while len(sids) + len(batch) < count and h3wire.new_stream(d.quic) // 4 < credit:
            sid = h3wire.new_stream(d.quic)
            d.h3.send_headers(sid, fields, end_stream=True)
            batch.append(sid)
        if batch:
            d.flush()  # the HEADERS go out first, then the resets
            for sid in batch:
                d.quic.reset_stream(sid, h3wire.H3_REQUEST_CANCELLED)
                try:
                    d.quic.stop_stream(sid, h3wire.H3_REQUEST_CANCELLED)
                except ValueError:
                    pass  # already finished and discarded
            d.flush()
            sids += batch
            d.pump(timeout=0)
        else:
            d.pump(
                lambda: d.quic._remote_max_streams_bidi > credit or d.quic.peer_close is not None,
                timeout=remaining(flood_deadline),
            )
    d.pump(lambda: d.quic.peer_close is not None, timeout=min(0.5, remaining(flood_deadline)))
    if d.quic.peer_close is not None:
        outcome = "closed"
    elif len(sids) == count:
        outcome = "all"
    else:
        outcome = "stalled"
    after = followup(d, args, resp, deadline)
    out = report(
        d,
        requested=count,
        opened=len(sids),
        answered=sum(1 for s in sids if s in resp.status),
        server_resets=sum(1 for s in sids if s in d.resets),
        credit_initial=credit_initial,
        credit_final=d.quic._remote_max_streams_bidi,
        outcome=outcome,
        followup=after,
        matched=server_closed(d, 0x107) or (outcome == "all" and bool(after and after["status"])),
        expected=expected,
    )
    return finish(d, out)


@attack("stream-open-flood")
def stream_open_flood(args, deadline):
    expected = "the stream credit bounded (see allowed), the server alive"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    quic, uni = d.quic, args.uni
    credit = quic._remote_max_streams_uni if uni else quic._remote_max_streams_bidi
    already = quic.get_next_available_stream_id(is_unidirectional=uni) // 4
    opened = []
    while True:
        sid = quic.get_next_available_stream_id(is_unidirectional=uni)
        if sid // 4 >= credit:
            break
        # Known to aioquic (so the server's RESET_STREAM or STOP_SENDING on it
        # is no error), with nothing in its send buffer.
        quic._get_or_create_stream_for_send(sid)
        if args.partial:
            first = varint(h3wire.RESERVED_TYPE) if uni else varint(h3wire.HEADERS)
            quic.send_stream_data(sid, first)
        else:
            # STREAM frame with the LEN bit, offset 0, length 0 (RFC 9000 §19.8).
            quic.raw_frames.append((0x0A, varint(sid) + varint(0)))
        opened.append(sid)
    d.flush()
    watch(d, deadline, args)
    up = alive(d)
    out = report(
        d,
        alive=up,
        uni=uni,
        allowed=credit - already,
        opened=len(opened),
        credit_after=quic._remote_max_streams_uni if uni else quic._remote_max_streams_bidi,
        server_resets=sum(1 for s in opened if s in d.resets),
        server_stop_sending=sum(1 for s in opened if s in d.stop_sending),
        matched=up,
        expected=expected,
    )
    return finish(d, out)
