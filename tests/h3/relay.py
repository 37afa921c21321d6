#!/usr/bin/env python3
"""A UDP relay whose client datagrams reach the server from rotating source
ports (tests/tests/h3_workers.rs): what a client behind a NAT that rebinds
again and again looks like to the server, one QUIC connection's packets
coming from several addresses in turn.

    relay.py --server 127.0.0.1:PORT [--sockets 6] [--every 4]

Binds a front socket on 127.0.0.1 (the address the client is given) and
--sockets back sockets on 127.0.0.1, each on its own port. Each
short-header datagram the client sends (1-RTT: the handshake is over) goes
to the server from one back socket, the next one after every --every such
datagrams, round and round; a long-header one (Initial, Handshake) from the
first back socket, as a NAT keeps its mapping through the handshake (RFC
9000 §9: the handshake needs a stable address, and a server may drop a
handshake packet from a new one). Each datagram the server sends to any
back socket goes back to the client from the front socket. Standard
library only.

Prints one JSON line once its sockets are bound:
    {"front": PORT, "back": [PORT, ...]}
and, when its stdin closes (the test is done), one more and exits:
    {"to_server": [datagrams sent from each back socket, in order],
     "to_client": [datagrams the server sent to each back socket],
     "bytes_to_client": N}
"""

import argparse
import json
import os
import select
import socket
import sys


def bound():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind(("127.0.0.1", 0))
    s.setblocking(False)
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True, help="HOST:PORT of the QUIC server")
    p.add_argument("--sockets", type=int, default=6, help="back sockets (source ports)")
    p.add_argument("--every", type=int, default=4, help="client datagrams per back socket in turn")
    args = p.parse_args()
    host, _, port = args.server.rpartition(":")
    server = (host, int(port))

    front = bound()
    back = [bound() for _ in range(args.sockets)]
    index = {s.fileno(): i for i, s in enumerate(back)}
    to_server = [0] * len(back)
    to_client = [0] * len(back)
    bytes_to_client = 0
    client = None
    sent = 0
    print(json.dumps({"front": front.getsockname()[1], "back": [s.getsockname()[1] for s in back]}))
    sys.stdout.flush()

    stdin = sys.stdin.fileno()
    watched = [front, stdin] + back
    while True:
        readable, _, _ = select.select(watched, [], [])
        if stdin in readable and not os.read(stdin, 4096):
            break
        for s in readable:
            if s is stdin:
                continue
            for _ in range(64):
                try:
                    data, addr = s.recvfrom(65536)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                if s is front:
                    client = addr
                    if data[0] & 0x80:
                        i = 0
                    else:
                        i = (sent // args.every) % len(back)
                        sent += 1
                    try:
                        back[i].sendto(data, server)
                        to_server[i] += 1
                    except (BlockingIOError, ConnectionRefusedError):
                        pass  # lost, as on a network: QUIC sends it again
                elif client is not None:
                    i = index[s.fileno()]
                    to_client[i] += 1
                    try:
                        front.sendto(data, client)
                        bytes_to_client += len(data)
                    except (BlockingIOError, ConnectionRefusedError):
                        pass
    print(
        json.dumps(
            {"to_server": to_server, "to_client": to_client, "bytes_to_client": bytes_to_client}
        )
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
