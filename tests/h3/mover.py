#!/usr/bin/env python3
"""An HTTP/3 client that moves while it downloads and watches for stateless
resets (tests/tests/h3_workers.rs): aioquic on tests/h3/h3wire.py's Driver.

    mover.py --connect 127.0.0.1:PORT --authority localhost --cafile CA.pem \
        --path /big [--connections 3] [--move-every 1048576] \
        [--window 262144] [--timeout 30] [--probe] [--pause-at BYTES]

Each of --connections QUIC connections, one after the other, GETs --path and
reads the answer to its end. Every --move-every bytes of body received, the
client moves: it sends from a new UDP socket (a new source port), and every
second move it also switches to the next connection ID the server issued
(an active migration, RFC 9000 §9.2, as a phone changing networks does;
the other moves look like a NAT rebinding, §9.3). A move is made between
two reads of the body, so it happens mid-download by construction. The
connection's receive windows are --window bytes, so the server never has
much more than that in flight when the client moves.

Every datagram that arrives is checked for a stateless reset (RFC 9000
§10.3): a short-header datagram whose last 16 bytes are the reset token of
a connection ID the server issued (the tokens of every ID it gave, retired
ones included). aioquic itself does not look for them.

--pause-at BYTES: once that much of the body has come, the client prints
{"paused": BYTES_RECEIVED} and stops reading its socket (nothing is
acknowledged, no credit is given) until a line arrives on its stdin, then
reads on: a download held open by construction for as long as the caller
wants (an upgrade or a reload happens meanwhile).

--probe, after the connections: the proof the watch works. Once the last
connection is closed, a datagram of 1 200 bytes to one of its server
connection IDs is sent every 0.2 s until the server, which has forgotten
the connection, answers it with a stateless reset carrying that ID's token
(at most 10 s).

Output: one JSON line per connection,
    {"status": 200, "body_len": N, "sha256": "<hex>", "moves": M,
     "new_cids": K, "ports": [local ports used], "resets": [{"cid": "<hex>",
     "len": N}], "tokens": T, "error": "..." (when it did not end well)}
then, with --probe, {"probe": {"sent": N, "reset": true|false}}.
Exit status 0 when every connection handshook.
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import time

import h3wire
from aioquic.h3 import events as h3ev
from aioquic.quic import events as qev


class Mover(h3wire.Driver):
    """A Driver that can change its UDP socket and records stateless resets."""

    def __init__(self, addr, cfg):
        super().__init__(addr, cfg)
        self.tokens = {}  # reset token -> the server connection ID, hex
        self.resets = []
        self.ports = [self.sock.getsockname()[1]]

    def learn(self):
        q = self.quic
        for c in [q._peer_cid] + list(q._peer_cid_available):
            token = c.stateless_reset_token
            if token:
                self.tokens[bytes(token)] = c.cid.hex()

    def check(self, data):
        """Records `data` if it is a stateless reset for one of our IDs."""
        self.learn()
        if len(data) >= 21 and not data[0] & 0x80 and bytes(data[-16:]) in self.tokens:
            self.resets.append({"cid": self.tokens[bytes(data[-16:])], "len": len(data)})
            return True
        return False

    def _receive(self):
        for _ in range(64):
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionRefusedError:
                self.unreachable += 1
                continue
            self.recv_bytes += len(data)
            self.recv_datagrams += 1
            self.check(data)
            self.quic.receive_datagram(data, self.addr, now=time.monotonic())

    def move(self, new_cid):
        """Sends from a new socket from now on (the old one is closed: what
        the server sends there is lost, and sent again)."""
        family = socket.AF_INET6 if ":" in self.addr[0] else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.connect(self.addr)
        sock.setblocking(False)
        old, self.sock = self.sock, sock
        old.close()
        self.ports.append(sock.getsockname()[1])
        if new_cid:
            self.quic.change_connection_id()
        self.quic.send_ping(len(self.ports))
        self.flush()


def one_connection(args, addr):
    cfg = h3wire.configuration(args)
    cfg.max_data = max(args.window * 4, 1 << 20)
    cfg.max_stream_data = args.window
    d = Mover(addr, cfg)
    state = {"status": None, "len": 0, "done": False, "error": None}
    digest = hashlib.sha256()

    def on_h3(ev):
        if isinstance(ev, h3ev.HeadersReceived) and state["status"] is None:
            state["status"] = next(
                (int(v) for n, v in ev.headers if n == b":status"), None
            )
        elif isinstance(ev, h3ev.DataReceived):
            digest.update(ev.data)
            state["len"] += len(ev.data)
        if getattr(ev, "stream_ended", False):
            state["done"] = True

    def on_quic(ev):
        if isinstance(ev, qev.StreamReset):
            state["error"] = f"stream reset {hex(ev.error_code)}"
            state["done"] = True

    d.on_h3_event = on_h3
    d.on_quic_event = on_quic
    d.connect()
    sid = h3wire.new_stream(d.quic)
    d.h3.send_headers(
        sid, h3wire.request_fields("GET", args.authority, args.path), end_stream=True
    )
    d.flush()
    deadline = time.monotonic() + args.timeout
    moves = new_cids = 0
    next_move = args.move_every
    pause = args.pause_at
    while not state["done"] and not d.quic.ended and time.monotonic() < deadline:
        d.pump(
            lambda: state["done"]
            or (args.move_every and state["len"] >= next_move)
            or (pause and state["len"] >= pause),
            timeout=h3wire.remaining(deadline),
        )
        if pause and state["len"] >= pause and not state["done"]:
            print(json.dumps({"paused": state["len"]}))
            sys.stdout.flush()
            sys.stdin.readline()
            pause = None
            deadline = time.monotonic() + args.timeout
        while args.move_every and state["len"] >= next_move and not state["done"]:
            moves += 1
            new_cid = moves % 2 == 0
            new_cids += new_cid
            d.move(new_cid)
            next_move += args.move_every
    if not state["done"]:
        close = d.quic.close_info()
        state["error"] = h3wire.error_name(close["code"], close["kind"] == "application") \
            if close else "timeout"
    d.learn()
    out = {
        "status": state["status"],
        "body_len": state["len"],
        "sha256": digest.hexdigest(),
        "moves": moves,
        "new_cids": new_cids,
        "ports": d.ports,
        "resets": d.resets,
        "tokens": len(d.tokens),
    }
    if state["error"]:
        out["error"] = state["error"]
    handshook = d.handshake
    d.close()
    return out, handshook, d


def probe(args, addr, d):
    """Sends datagrams to one of the closed connection's server IDs until a
    stateless reset for it comes back."""
    token, cid = next(iter(d.tokens.items()))
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.connect(addr)
    sock.settimeout(0.2)
    sent = 0
    end = time.monotonic() + 10
    reset = False
    while not reset and time.monotonic() < end:
        first = 0x40 | (os.urandom(1)[0] & 0x3F)
        datagram = bytes([first]) + bytes.fromhex(cid) + os.urandom(1200 - 1 - len(cid) // 2)
        sock.send(datagram)
        sent += 1
        try:
            while True:
                data = sock.recv(65536)
                if len(data) >= 21 and not data[0] & 0x80 and data[-16:] == token:
                    reset = True
                    break
        except (socket.timeout, ConnectionRefusedError):
            pass
    sock.close()
    return {"sent": sent, "reset": reset}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--connect", required=True)
    p.add_argument("--authority", default="localhost")
    p.add_argument("--cafile")
    p.add_argument("--insecure", action="store_true")
    p.add_argument("--alpn", default="h3")
    p.add_argument("--path", default="/")
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--move-every", type=int, default=1 << 20)
    p.add_argument("--window", type=int, default=256 << 10)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--probe", action="store_true")
    p.add_argument("--pause-at", type=int, default=0)
    args = p.parse_args()
    addr = h3wire.parse_hostport(args.connect)
    ok = True
    last = None
    for _ in range(args.connections):
        out, handshook, last = one_connection(args, addr)
        ok &= handshook
        print(json.dumps(out))
        sys.stdout.flush()
    if args.probe and last is not None and last.tokens:
        print(json.dumps({"probe": probe(args, addr, last)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
