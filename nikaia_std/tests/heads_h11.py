#!/usr/bin/env python3
"""Reads each request head as h11 (an independent HTTP/1.1 parser) does
and compares it with what ours read (`request_heads_agree_with_h11` in
fuzz_replay.rs). Input: lines of `PATH<TAB>HEX<TAB>OURS`, OURS as
`fuzzing::request_head_seen` writes it. Exit 1 on a head we accept that
h11 refuses or reads otherwise."""

import json
import sys

import h11

MAX_HEAD = 32 << 10


def h11_reads(data):
    """("accepted", request, head length) or ("refused", why) or
    ("incomplete",)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    conn.receive_data(data)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError as e:
        return ("refused", str(e))
    if event is h11.NEED_DATA:
        return ("incomplete",)
    if not isinstance(event, h11.Request):
        return ("refused", repr(event))
    # Where h11 found the head's end: what it has not parsed yet is left
    # in its buffer (h11 0.14's, not a public name).
    return ("accepted", event, len(data) - len(conn._receive_buffer))


def normalized(data):
    """The head with what RFC 9112 lets a server accept and h11 does not
    written as h11 reads it: empty lines before the request line dropped
    (§2.2: a server SHOULD ignore them), and bytes past ASCII in the
    request target percent-encoded (we take them as nginx does; no
    framing depends on them). Both are named in `spec/http.md`."""
    data = data.lstrip(b"\r\n")
    line_end = min(i for i in (data.find(b"\r"), data.find(b"\n"), len(data)) if i >= 0)
    line = data[:line_end].split(b" ")
    if len(line) == 3:
        line[1] = encode_high(line[1])
    return b" ".join(line) + data[line_end:]


def encode_high(target):
    return b"".join(b"%%%02X" % b if b >= 0x80 else bytes([b]) for b in target)


def framing(request):
    names = {bytes(n).lower(): bytes(v) for n, v in request.headers}
    if b"transfer-encoding" in names:
        return "chunked"
    n = int(names.get(b"content-length", b"0"))
    return "none" if n == 0 else f"length {n}"


def main():
    bad, stricter, agreed = [], 0, 0
    with open(sys.argv[1]) as f:
        for line in f:
            path, hexed, ours = line.rstrip("\n").split("\t")
            data = bytes.fromhex(hexed)
            ours = json.loads(ours)
            theirs = h11_reads(normalized(data))
            if "len" in ours:
                # Our head's end, in the normalized bytes.
                ours["end"] = len(normalized(data[: ours["len"]]))
            if "len" not in ours:
                if theirs[0] == "accepted":
                    stricter += 1
                continue
            if theirs[0] != "accepted":
                bad.append(f"{path}: we accept, h11 {theirs}")
                continue
            request = theirs[1]
            fields = [
                (bytes.fromhex(n).lower(), bytes.fromhex(v)) for n, v in ours["fields"]
            ]
            theirs_fields = [(bytes(n), bytes(v)) for n, v in request.headers.raw_items()]
            theirs_fields = [(n.lower(), v) for n, v in theirs_fields]
            checks = {
                "method": (bytes.fromhex(ours["method"]), bytes(request.method)),
                "target": (encode_high(bytes.fromhex(ours["target"])), bytes(request.target)),
                "version": (ours["version"].encode(), bytes(request.http_version)),
                "fields": (fields, theirs_fields),
                "framing": (ours["framing"], framing(request)),
                "head's end": (ours["end"], theirs[2]),
            }
            for what, (a, b) in checks.items():
                if a != b:
                    bad.append(f"{path}: {what}: ours {a!r}, h11 {b!r}")
            agreed += 1
    print(f"{agreed} heads read alike; {stricter} refused by us, accepted by h11")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
