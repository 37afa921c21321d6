"""The QUIC-layer attack primitives of tests/h3/h3client.py
(`h3client.py attack NAME`), beside the HTTP/3 ones of tests/h3/h3attacks.py
(whose common parts they use; the keys every report has are described in
h3client.py). Each ends within --timeout.

new-connection-id-flood [--count N] [--retire-prior-to zero|advance] [--wait 3]
    N NEW_CONNECTION_ID frames (default 4 x the server's
    active_connection_id_limit, at least 16). zero: retire_prior_to 0, so
    the active set passes the limit: expected transport close
    CONNECTION_ID_LIMIT_ERROR 0x09. advance: each retires all but the last
    limit-1, so the server must send RETIRE_CONNECTION_ID for each: expected
    the server alive (closing is allowed: RFC 9000 §5.1.2 lets a server
    that has too many retirements to send close with 0x09). Keys: limit,
    mode, requested, sent, retire_frames_received, alive.
path-challenge-flood [--count 1000] [--withhold-acks] [--wait 3]
    --count PATH_CHALLENGE frames in 1-RTT packets on the current path;
    with --withhold-acks no ACK is sent meanwhile (the server's window
    cannot open: the quic-go CVE-2023-49295 setting). Keys: challenges,
    sent, responses, followup, alive. Expected: the server alive; answering,
    dropping or closing are all allowed.
ack-withhold [--acked-packets 10]
    GET --path (give a large file) and stop acknowledging after the first
    --acked-packets datagrams of the download. Keys: bytes_before (datagram
    bytes received before withholding), bytes_after (received after),
    datagrams_after, last_datagram_s (seconds from withholding to the last
    datagram), stream_bytes, complete, alive. Expected: not complete; the server
    stops within its window and probes, and stays alive.
initial-flood [--count 100] [--sockets 1] [--first-only] [--wait 3]
    --count fresh client Initials (one aioquic QuicConnection each: new
    connection IDs, new keys, a full ClientHello in one 1200-byte datagram)
    from --sockets UDP sockets, never followed up. Keys: count,
    sent_bytes, received_bytes, answered (connections that got anything),
    packets ({"initial": n, "handshake": n, "retry": n, "0rtt": n,
    "version_negotiation": n, "short": n, "unknown": n}), retried,
    max_ratio (largest received/sent bytes of one connection),
    over_3x (connections past 3x), counters.icmp_unreachable. No
    handshake/alpn/close keys (there is no connection). Expected:
    over_3x == 0.
truncated-transport-params [--variant cut|len|varint|dup|empty]
    A ClientHello whose quic_transport_parameters extension is damaged: cut
    (its last byte missing), len (a last parameter claims more bytes than
    follow), varint (ends inside a varint), dup (the first parameter again),
    empty (no parameters, so no initial_source_connection_id). Keys:
    variant, params_bytes. Expected: transport close
    TRANSPORT_PARAMETER_ERROR 0x08 or a CRYPTO_ERROR, no handshake.
"""

import collections
import os
import socket
import time

import h3wire
from aioquic.quic.connection import QuicConnection, QuicConnectionId
from h3attacks import (
    Responses,
    alive,
    attack,
    finish,
    followup,
    get,
    no_handshake,
    open_h3,
    report,
    server_closed,
    watch,
)
from h3wire import remaining, varint


@attack("new-connection-id-flood")
def new_connection_id_flood(args, deadline):
    advance = args.retire_prior_to == "advance"
    expected = (
        "the server alive, RETIRE_CONNECTION_ID sent (a close is allowed)"
        if advance
        else "transport close CONNECTION_ID_LIMIT_ERROR 0x09"
    )
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    quic = d.quic
    limit = quic._remote_active_connection_id_limit
    count = args.count or max(16, 4 * limit)
    quic.replenish = False
    seq = quic._host_cid_seq
    for _ in range(count):
        cid, token = h3wire.random_cid(len(quic.host_cid)), os.urandom(16)
        retire_prior_to = max(0, seq - limit + 1) if advance else 0
        body = varint(seq) + varint(retire_prior_to) + bytes([len(cid)]) + cid + token
        quic.raw_frames.append((0x18, body))
        # Ours to receive on, as aioquic's own would be (never sent by aioquic).
        quic._host_cids.append(
            QuicConnectionId(
                cid=cid, sequence_number=seq, stateless_reset_token=token, was_sent=True
            )
        )
        seq += 1
    quic._host_cid_seq = seq
    d.flush()
    watch(d, deadline, args)
    up = alive(d)
    matched = up and (
        d.quic.close_info() is None or d.quic.peer_close is not None
        if advance
        else server_closed(d, 0x09, "transport")
    )
    out = report(
        d,
        alive=up,
        limit=limit,
        mode=args.retire_prior_to,
        requested=count,
        sent=quic.raw_frames_sent,
        retire_frames_received=len(quic.retired_seqs),
        matched=matched,
        expected=expected,
    )
    return finish(d, out)


@attack("path-challenge-flood")
def path_challenge_flood(args, deadline):
    expected = "the server alive (answering, dropping or closing allowed)"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    resp = Responses(d)
    count = args.count or 1000
    if args.withhold_acks:
        d.quic.withhold_acks = lambda: True
    for _ in range(count):
        d.quic.raw_frames.append((0x1A, os.urandom(8)))
    d.flush()
    watch(
        d,
        deadline - 1.0,
        args,
        until=lambda: not d.quic.raw_frames and len(d.quic.path_responses) >= count,
    )
    d.quic.withhold_acks = None
    after = followup(d, args, resp, deadline)
    up = alive(d)
    out = report(
        d,
        alive=up,
        challenges=count,
        sent=d.quic.raw_frames_sent,
        responses=len(d.quic.path_responses),
        withheld_acks=args.withhold_acks,
        followup=after,
        matched=up,
        expected=expected,
    )
    return finish(d, out)


@attack("ack-withhold")
def ack_withhold(args, deadline):
    expected = "not complete: the server stops sending unacknowledged data; alive"
    d = open_h3(args, deadline)
    if not d.handshake:
        return no_handshake(d, expected)
    resp = Responses(d)
    base = d.recv_datagrams
    began = {}
    last = {"t": None}

    def withhold():
        if d.recv_datagrams - base < args.acked_packets:
            return False
        if not began:
            began.update(t=time.monotonic(), bytes=d.recv_bytes, datagrams=d.recv_datagrams)
        return True

    def on_datagram(data):
        last["t"] = time.monotonic()
        return False

    d.quic.withhold_acks = withhold
    d.drop_incoming = on_datagram
    sid = get(d, args)
    d.pump(lambda: resp.finished(sid), timeout=remaining(deadline))
    seen = {
        "path": args.path,
        "acked_packets": args.acked_packets,
        "status": resp.status.get(sid),
        "bytes_before": began.get("bytes"),
        "bytes_after": d.recv_bytes - began["bytes"] if began else 0,
        "datagrams_after": d.recv_datagrams - began["datagrams"] if began else 0,
        "last_datagram_s": round(last["t"] - began["t"], 3) if began and last["t"] else None,
        "acks_withheld": d.quic.acks_withheld,
        "stream_bytes": resp.body[sid],
        "complete": sid in resp.ended,
    }
    up = alive(d)  # after the figures: its PING brings more datagrams
    out = report(
        d,
        alive=up,
        **seen,
        matched=bool(began) and not seen["complete"] and up,
        expected=expected,
    )
    return finish(d, out)


# --- Initials without a connection ---------------------------------------------

V1_TYPES = {0: "initial", 1: "0rtt", 2: "handshake", 3: "retry"}
V2_TYPES = {1: "initial", 2: "0rtt", 3: "handshake", 0: "retry"}
QUIC_V2 = 0x6B3343CF


def read_varint(data, i):
    first = data[i]
    n = 1 << (first >> 6)
    value = first & 0x3F
    for b in data[i + 1 : i + n]:
        value = (value << 8) | b
    if i + n > len(data):
        raise IndexError("cut varint")
    return value, i + n


def packets(data, cid_len=8):
    """[(type, dcid)] of the QUIC packets coalesced in one datagram (a short
    header's connection id is `cid_len` bytes: ours)."""
    out = []
    i = 0
    try:
        while i < len(data):
            b0 = data[i]
            if not b0 & 0x80:
                out.append(("short", data[i + 1 : i + 1 + cid_len]))
                break
            version = int.from_bytes(data[i + 1 : i + 5], "big")
            j = i + 5
            dcid = data[j + 1 : j + 1 + data[j]]
            j += 1 + data[j]
            j += 1 + data[j]
            if version == 0:
                out.append(("version_negotiation", dcid))
                break
            kind = (V2_TYPES if version == QUIC_V2 else V1_TYPES)[(b0 >> 4) & 3]
            if kind == "retry":
                out.append(("retry", dcid))
                break
            if kind == "initial":
                token_len, j = read_varint(data, j)
                j += token_len
            length, j = read_varint(data, j)
            out.append((kind, dcid))
            i = j + length
    except IndexError:
        out.append(("unknown", None))
    return out


@attack("initial-flood")
def initial_flood(args, deadline):
    expected = "no connection got more than 3x its bytes before validation"
    addr = h3wire.parse_hostport(args.connect)
    cfg = h3wire.configuration(args)
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    socks = []
    for _ in range(max(1, args.sockets)):
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.connect(addr)
        s.setblocking(False)
        socks.append(s)
    sent = {}  # our source connection id -> bytes sent
    got = collections.Counter()  # our source connection id -> bytes received
    kinds = collections.Counter()
    retried = set()
    totals = {"sent": 0, "received": 0, "unreachable": 0, "unmatched": 0}

    def drain():
        for s in socks:
            while True:
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    break
                except ConnectionRefusedError:
                    totals["unreachable"] += 1
                    continue
                totals["received"] += len(data)
                found = packets(data, cfg.connection_id_length)
                for kind, _ in found:
                    kinds[kind] += 1
                dcid = found[0][1] if found else None
                if dcid in sent:
                    got[dcid] += len(data)
                    if found[0][0] == "retry":
                        retried.add(dcid)
                else:
                    totals["unmatched"] += 1

    count = args.count or 100
    send_deadline = deadline - min(1.0, args.timeout / 4)
    for i in range(count):
        if remaining(send_deadline) <= 0:
            break
        q = QuicConnection(configuration=cfg)
        q.connect(addr, now=time.monotonic())
        datagrams = [data for data, _ in q.datagrams_to_send(now=time.monotonic())]
        if args.first_only:
            datagrams = datagrams[:1]
        s = socks[i % len(socks)]
        n = 0
        for data in datagrams:
            try:
                s.send(data)
                n += len(data)
            except BlockingIOError:
                pass
            except ConnectionRefusedError:
                totals["unreachable"] += 1
        sent[q.host_cid] = n
        totals["sent"] += n
        if i % 32 == 31:
            drain()
    wait = args.wait if args.wait is not None else 3.0
    end = min(deadline, time.monotonic() + wait)
    while time.monotonic() < end:
        drain()
        time.sleep(0.02)
    drain()
    for s in socks:
        s.close()
    ratios = [got[c] / sent[c] for c in sent if sent[c]]
    over = sum(1 for c in sent if sent[c] and got[c] > 3 * sent[c])
    return {
        "attack": "initial-flood",
        "count": len(sent),
        "sockets": len(socks),
        "sent_bytes": totals["sent"],
        "received_bytes": totals["received"],
        "answered": sum(1 for c in sent if got[c]),
        "packets": dict(kinds),
        "retried": len(retried),
        "unmatched_datagrams": totals["unmatched"],
        "max_ratio": round(max(ratios), 3) if ratios else 0,
        "over_3x": over,
        "counters": {"icmp_unreachable": totals["unreachable"]},
        "matched": over == 0 and totals["unreachable"] == 0,
        "expected": expected,
    }


def damage(params, variant):
    """The transport parameters blob (RFC 9000 §18) damaged as --variant says."""
    if variant == "cut":
        return params[:-1]
    if variant == "len":
        return params + varint(0x3F3F) + varint(100) + b"\x00" * 4
    if variant == "varint":
        return params + b"\x40"
    if variant == "dup":
        _, i = read_varint(params, 0)
        length, i = read_varint(params, i)
        return params + params[: i + length]
    return b""


@attack("truncated-transport-params")
def truncated_transport_params(args, deadline):
    expected = "transport close TRANSPORT_PARAMETER_ERROR 0x08 or CRYPTO_ERROR, no handshake"
    d = h3wire.Driver(h3wire.parse_hostport(args.connect), h3wire.configuration(args), h3=False)
    original = d.quic._serialize_transport_parameters
    sizes = {}

    # Run-time patch: QuicConnection._initialize puts the result of
    # self._serialize_transport_parameters() into the ClientHello's
    # quic_transport_parameters extension; an instance attribute of that name
    # shadows the method, so the extension (its TLS length still right)
    # carries the damaged blob.
    def damaged():
        blob = damage(original(), args.variant)
        sizes["params_bytes"] = len(blob)
        return blob

    d.quic._serialize_transport_parameters = damaged
    d.connect()
    d.pump(lambda: d.quic.peer_close is not None or d.handshake, timeout=remaining(deadline))
    c = d.quic.peer_close
    matched = (
        c is not None
        and c["kind"] == "transport"
        and (c["code"] == 0x08 or 0x100 <= c["code"] <= 0x1FF)
        and not d.handshake
    )
    out = report(d, variant=args.variant, matched=matched, expected=expected, **sizes)
    return finish(d, out)
