#!/usr/bin/env python3
"""A produced body over HTTP/2 to a client that never reads it (h2c by
prior knowledge, the `h2` library): the client opens the connection's
window but never its stream's, asks a sibling stream beside it, and holds
the connection until its standard input closes.

    python3 tests/h2/produced.py HOST PORT PATH

prints one JSON line once the stream's window is used up and the sibling
is whole: the bytes each got. The Rust test (tests/tests/produced.rs)
watches the producer's pulls stop, then closes our input.
"""

import json
import socket
import sys

import h2.config
import h2.connection
import h2.events


def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sock = socket.create_connection((host, port), timeout=20)
    config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()

    def headers(p):
        return [(":method", "GET"), (":path", p), (":scheme", "http"), (":authority", "t")]

    conn.send_headers(1, headers(path), end_stream=True)
    conn.send_headers(3, headers("/gen/1/100"), end_stream=True)
    sock.sendall(conn.data_to_send())
    got = {1: 0, 3: 0}
    ended = set()
    while got[1] < 65535 or 3 not in ended:
        data = sock.recv(1 << 16)
        if not data:
            break
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.DataReceived):
                got[e.stream_id] += len(e.data)
                # The connection's window opens again; stream 1's never.
                if e.flow_controlled_length > 0:
                    conn.increment_flow_control_window(e.flow_controlled_length)
            elif isinstance(e, h2.events.StreamEnded):
                ended.add(e.stream_id)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    print(json.dumps({"stream": got[1], "sibling": got[3]}), flush=True)
    sys.stdin.read()
    sock.close()


if __name__ == "__main__":
    main()
