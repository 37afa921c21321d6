#!/usr/bin/env python3
"""The TLS records each answer arrives in: a TLS 1.3 client (Python's ssl
over memory BIOs) reads the raw socket, cuts it at the record headers, and
prints each answer's application-data record payload lengths (the first
answer's include the session tickets).

usage: benches/http/tls_records.py CAFILE PORT PATH [PATH ...]
"""
import socket, ssl, sys, time
def run(cafile, port, paths, alpn=None):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if alpn: ctx.set_alpn_protocols(alpn)
    s = socket.create_connection(("127.0.0.1", port))
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, out, server_hostname="localhost")
    def flush():
        d = out.read()
        if d: s.sendall(d)
    while True:
        try:
            o.do_handshake(); break
        except ssl.SSLWantReadError:
            flush(); inc.write(s.recv(65536))
    flush()
    res = []
    raw = b""
    for p in paths:
        o.write(f"GET {p} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()); flush()
        recs = []; body = b""; need = None
        while True:
            while len(raw) >= 5 and len(raw) >= 5 + int.from_bytes(raw[3:5], "big"):
                n = int.from_bytes(raw[3:5], "big")
                rec, raw = raw[:5+n], raw[5+n:]
                recs.append((rec[0], n)); inc.write(rec)
            try:
                while True:
                    d = o.read(1 << 20)
                    if not d: break
                    body += d
            except ssl.SSLWantReadError: pass
            if b"\r\n\r\n" in body and need is None:
                h, _, _ = body.partition(b"\r\n\r\n")
                cl = [l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")]
                need = len(h) + 4 + int(cl[0].split(b":")[1])
            if need is not None and len(body) >= need: break
            raw += s.recv(1 << 20)
        # app-data records (type 23) of the response
        res.append((p, len(body), [n for t, n in recs if t == 23], [t for t, n in recs if t != 23]))
    return res
if __name__ == "__main__":
    for p, n, recs, other in run(sys.argv[1], int(sys.argv[2]), sys.argv[3:]):
        print(p, n, "bytes;", len(recs), "app records", recs, "other", other)
