#!/usr/bin/env python3
"""HTTP/2 attacks and protocol faults against a nikaia server (h2c by prior
knowledge), each checked for the server's exact answer while a well-behaved
client on another connection is served.

    python3 tests/h2/attacks.py HOST PORT SCENARIO

prints one JSON line (what was seen: frames, codes, timings) and exits 0 when
the expected behaviour was observed, 1 otherwise (the JSON's "failures" say
what differed). `--list` prints the scenario names.

The server under test serves (tests/tests/h2_floods.rs):
    /f/small.bin   4096 bytes        /f/big.bin   1 MiB (1048576 bytes)
    /t             a short text       POST /len    the body's length, as text

The misbehaving connections are written frame by frame (hyperframe parses
what comes back, hpack encodes and decodes header blocks); the bystander is
a plain client of the `h2` library.
"""

import json
import socket
import struct
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import hpack
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types and flags (RFC 9113 §6, RFC 9218 §7.1).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS = 0x0, 0x1, 0x2, 0x3, 0x4
PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0x5, 0x6, 0x7, 0x8, 0x9
PRIORITY_UPDATE = 0x10
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

# Settings.
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS = 0x1, 0x2, 0x3
INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE, MAX_HEADER_LIST_SIZE = 0x4, 0x5, 0x6
NO_RFC7540_PRIORITIES = 0x9

CODES = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
]
NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x3
FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = 0x6, 0x7, 0x8
COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x9, 0xB

MAX_WINDOW = (1 << 31) - 1
SMALL, BIG = 4096, 1 << 20
MAX_HEADER_BYTES = 32768


def code_name(code):
    return CODES[code] if 0 <= code < len(CODES) else "0x%x" % code


def frame(kind, flags, stream, payload=b""):
    """A frame's bytes, whatever its content (malformed ones included)."""
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream & 0x7FFFFFFF)
        + payload
    )


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def window_update(stream, increment):
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def rst(stream, code):
    return frame(RST_STREAM, 0, stream, struct.pack(">I", code))


def ping(payload=b"12345678", ack=False):
    return frame(PING, ACK if ack else 0, 0, payload)


def hpack_int(value, prefix_bits, first):
    """RFC 7541 §5.1 integer, `first` holding the bits above the prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A literal field without indexing, new name, no Huffman (§6.2.2):
    bytes exactly as given (uppercase names included), the dynamic table
    untouched."""
    if isinstance(name, str):
        name = name.encode()
    if isinstance(value, str):
        value = value.encode()
    return b"\x00" + hpack_int(len(name), 7, 0) + name + hpack_int(len(value), 7, 0) + value


def request_block(path, method="GET", authority="localhost", extra=(), pseudo=None):
    """A header block of literals (the dynamic table is never touched, so
    blocks can be sent in any order or dropped)."""
    if pseudo is None:
        pseudo = [
            (":method", method),
            (":scheme", "http"),
            (":authority", authority),
            (":path", path),
        ]
    return b"".join(literal(n, v) for n, v in list(pseudo) + list(extra))


def headers(stream, block, end_stream=True, end_headers=True):
    flags = (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
    return frame(HEADERS, flags, stream, block)


def get(stream, path, **kw):
    return headers(stream, request_block(path, **kw))


class Raw:
    """One connection written frame by frame; what comes back is parsed
    (hyperframe) and tallied per stream."""

    def __init__(self, addr, client_settings=(), preface=True, big_window=False, timeout=5.0):
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = 1 << 20
        self.eof = False
        self.eof_at = None
        self.send_error = None
        self.start = time.monotonic()
        self.frames = 0
        self.kinds = {}
        self.tail = []
        self.first = None
        self.server_settings = None
        self.settings_acks = 0
        self.status = {}
        self.header_flags = {}
        self.data = {}
        self.data_frames = 0
        self.ended = set()
        self.rst = {}
        self.rst_at = {}
        self.goaways = []
        self.ping_acks = 0
        self.pings = []
        self.window_updates = 0
        self.order = []  # (stream, what) for the streams a scenario watches
        self.block = None
        self.parse_error = None
        if preface:
            pairs = list(client_settings)
            if big_window:
                pairs.append((INITIAL_WINDOW_SIZE, MAX_WINDOW))
            out = PREFACE + settings(*pairs)
            if big_window:
                out += window_update(0, MAX_WINDOW - 65535)
            self.send(out)

    def elapsed(self):
        return round(time.monotonic() - self.start, 3)

    def send(self, *chunks):
        try:
            self.sock.sendall(b"".join(chunks))
            return True
        except OSError as e:
            self.send_error = repr(e)
            return False

    def _note(self, text):
        self.tail.append(text)
        if len(self.tail) > 16:
            del self.tail[0]

    def read_frame(self, deadline):
        """The next frame, or None at EOF or the deadline."""
        while True:
            if len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + length:
                    head = bytes(self.buf[:9])
                    body = bytes(self.buf[9 : 9 + length])
                    del self.buf[: 9 + length]
                    return self._parse(head, body)
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                return None
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                self.eof_at = self.elapsed()
                continue
            self.buf += chunk

    def _parse(self, head, body):
        try:
            f, length = Frame.parse_frame_header(memoryview(head))
            f.parse_body(memoryview(body))
        except Exception as e:  # a frame hyperframe refuses: record it
            self.parse_error = "%r on %s" % (e, head.hex())
            f = None
        self.frames += 1
        name = type(f).__name__ if f is not None else "Unparsed"
        self.kinds[name] = self.kinds.get(name, 0) + 1
        if self.first is None:
            self.first = name
        if f is None:
            self._note("Unparsed(%s)" % head.hex())
            return f
        sid = f.stream_id
        if isinstance(f, SettingsFrame):
            if "ACK" in f.flags:
                self.settings_acks += 1
                self._note("SETTINGS(ACK)")
            else:
                if self.server_settings is None:
                    self.server_settings = dict(f.settings)
                self._note("SETTINGS(%s)" % dict(f.settings))
                self.send(frame(SETTINGS, ACK, 0))
        elif isinstance(f, PingFrame):
            if "ACK" in f.flags:
                self.ping_acks += 1
            else:
                self.pings.append(bytes(f.opaque_data))
                self._note("PING(%r)" % bytes(f.opaque_data))
        elif isinstance(f, GoAwayFrame):
            self.goaways.append((f.last_stream_id, f.error_code))
            self._note("GOAWAY(last=%d,%s)" % (f.last_stream_id, code_name(f.error_code)))
        elif isinstance(f, RstStreamFrame):
            self.rst[sid] = f.error_code
            self.rst_at[sid] = self.elapsed()
            self.order.append((sid, "RST:" + code_name(f.error_code)))
            self._note("RST_STREAM(%d,%s)" % (sid, code_name(f.error_code)))
        elif isinstance(f, (HeadersFrame, ContinuationFrame)):
            if isinstance(f, HeadersFrame):
                self.block = (sid, bytearray(f.data), "END_STREAM" in f.flags)
            elif self.block is not None:
                self.block[1].extend(f.data)
            if "END_HEADERS" in f.flags and self.block is not None:
                bsid, data, end = self.block
                self.block = None
                try:
                    fields = self.decoder.decode(bytes(data))
                except Exception as e:
                    self.parse_error = "HPACK: %r" % e
                    fields = []
                st = dict(fields).get(":status")
                if bsid not in self.status:
                    self.status[bsid] = int(st) if st else None
                self.header_flags[bsid] = "ES" if end else ""
                self.order.append((bsid, "HEADERS:%s%s" % (st, ",ES" if end else "")))
                if end:
                    self.ended.add(bsid)
                self._note("HEADERS(%d,:status=%s%s)" % (bsid, st, ",ES" if end else ""))
        elif isinstance(f, DataFrame):
            self.data_frames += 1
            self.data[sid] = self.data.get(sid, b"") + bytes(f.data)
            end = "END_STREAM" in f.flags
            if end:
                self.ended.add(sid)
            if not self.order or self.order[-1] != (sid, "DATA"):
                self.order.append((sid, "DATA"))
            if end:
                self.order.append((sid, "END_STREAM"))
        elif isinstance(f, WindowUpdateFrame):
            self.window_updates += 1
        return f

    def pump(self, until=lambda: False, timeout=3.0):
        """Reads until `until()` holds, EOF, or `timeout`; `until()`."""
        deadline = time.monotonic() + timeout
        while not until():
            if self.read_frame(deadline) is None and (self.eof or time.monotonic() >= deadline):
                break
        return until()

    def drain(self, seconds):
        """Reads whatever comes for `seconds` (or until EOF)."""
        self.pump(lambda: False, seconds)

    def done(self, sid):
        return sid in self.ended or sid in self.rst

    def fetch(self, sid, path, timeout=3.0, **kw):
        """GET `path` on `sid`; (status, body length) or None."""
        self.send(get(sid, path, **kw))
        if not self.pump(lambda: self.done(sid), timeout):
            return None
        return (self.status.get(sid), len(self.data.get(sid, b"")))

    def closed(self, timeout=3.0):
        """The server closed the connection within `timeout`."""
        self.pump(lambda: self.eof, timeout)
        return self.eof

    def summary(self):
        return {
            "frames": self.frames,
            "kinds": self.kinds,
            "first": self.first,
            "goaway": [(last, code_name(c)) for last, c in self.goaways],
            "rst": len(self.rst),
            "rst_codes": sorted({code_name(c) for c in self.rst.values()}),
            "ping_acks": self.ping_acks,
            "data_frames": self.data_frames,
            "eof": self.eof,
            "eof_at": self.eof_at,
            "send_error": self.send_error,
            "parse_error": self.parse_error,
            "last_frames": self.tail,
        }

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Bystander:
    """A well-behaved client (the `h2` library) fetching /f/small.bin, and
    now and then /f/big.bin, in a loop on its own connections while an
    attack runs; every answer must be whole."""

    def __init__(self, addr):
        self.addr = addr
        self.ok = 0
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        # At least one answer during the attack: wait a little for it.
        deadline = time.monotonic() + 3
        while self.ok == 0 and not self.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        self.stop.set()
        self.thread.join(10)
        return False

    def _run(self):
        n = 0
        while not self.stop.is_set():
            try:
                paths = ["/f/small.bin"] * 4 + (["/f/big.bin"] if n % 3 == 0 else [])
                for status, length, path in h2_fetch(self.addr, paths):
                    want = BIG if path.endswith("big.bin") else SMALL
                    if status == 200 and length == want:
                        self.ok += 1
                    else:
                        self.errors.append("%s: status %s, %s bytes" % (path, status, length))
            except Exception as e:
                self.errors.append(repr(e))
            n += 1
            if len(self.errors) > 5:
                break

    def report(self):
        return {"ok": self.ok, "errors": self.errors[:5]}


def h2_fetch(addr, paths, timeout=5.0):
    """GETs `paths` one after another on one new connection with the `h2`
    library: [(status, body length, path)]."""
    sock = socket.create_connection(addr, timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    results = []
    deadline = time.monotonic() + timeout
    try:
        for path in paths:
            sid = conn.get_next_available_stream_id()
            conn.send_headers(
                sid,
                [(":method", "GET"), (":scheme", "http"), (":authority", "localhost"), (":path", path)],
                end_stream=True,
            )
            sock.sendall(conn.data_to_send())
            status, length, ended = None, 0, False
            while not ended:
                if time.monotonic() > deadline:
                    raise TimeoutError("bystander: no answer to %s in %ss" % (path, timeout))
                chunk = sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("bystander: connection closed during %s" % path)
                for ev in conn.receive_data(chunk):
                    if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                        status = int(dict(ev.headers)[b":status"])
                    elif isinstance(ev, h2.events.DataReceived):
                        if ev.stream_id == sid:
                            length += len(ev.data)
                        conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                        ended = True
                    elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                        raise ConnectionError("bystander: %s reset (%s)" % (path, ev.error_code))
                    elif isinstance(ev, h2.events.ConnectionTerminated):
                        raise ConnectionError("bystander: GOAWAY %s" % ev.error_code)
                out = conn.data_to_send()
                if out:
                    sock.sendall(out)
            results.append((status, length, path))
        conn.close_connection()
        sock.sendall(conn.data_to_send())
    finally:
        sock.close()
    return results


class Check:
    def __init__(self, addr):
        self.addr = addr
        self.failures = []
        self.seen = {}

    def expect(self, cond, message):
        if not cond:
            self.failures.append(message)
        return cond

    def served_after(self):
        """A fresh well-behaved connection is served after the attack."""
        try:
            got = h2_fetch(self.addr, ["/f/small.bin", "/f/big.bin"])
            self.seen["after"] = [(s, n) for s, n, _ in got]
            self.expect(
                [(s, n) for s, n, _ in got] == [(200, SMALL), (200, BIG)],
                "a well-behaved connection after the attack got %s" % got,
            )
        except Exception as e:
            self.failures.append("a well-behaved connection after the attack failed: %r" % e)

    def bystander(self, b):
        self.seen["bystander"] = b.report()
        self.expect(b.ok > 0, "the well-behaved connection got no answer during the attack")
        self.expect(not b.errors, "the well-behaved connection failed during the attack: %s" % b.errors[:3])

    def goaway(self, c, code, name="connection", timeout=3.0):
        """`c` gets exactly one GOAWAY, with `code`, and is then closed."""
        c.pump(lambda: c.goaways or c.eof, timeout)
        closed = c.closed(timeout)
        self.seen[name] = c.summary()
        want = code_name(code)
        got = [code_name(x) for _, x in c.goaways]
        self.expect(got[:1] == [want], "%s: expected GOAWAY %s, saw GOAWAY %s" % (name, want, got or "none"))
        self.expect(len(got) <= 1, "%s: more than one GOAWAY: %s" % (name, got))
        self.expect(closed, "%s: not closed within %ss after the GOAWAY" % (name, timeout))
        return c.goaways[0] if c.goaways else None

    def no_goaway(self, c, name="connection"):
        self.expect(not c.goaways, "%s: unexpected GOAWAY %s" % (name, [(l, code_name(x)) for l, x in c.goaways]))
        self.expect(not c.eof, "%s: closed by the server" % name)


# --- scenarios --------------------------------------------------------------

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def settings_and_get(k):
    """The server's SETTINGS; a 16384-octet frame is accepted."""
    c = Raw(k.addr)
    c.pump(lambda: c.server_settings is not None and c.settings_acks > 0, 3)
    s = c.server_settings or {}
    k.seen["server_settings"] = s
    k.expect(c.first == "SettingsFrame", "the server's first frame was %s, not SETTINGS" % c.first)
    k.expect(s.get(MAX_CONCURRENT_STREAMS) == 128, "MAX_CONCURRENT_STREAMS %s, want 128" % s.get(MAX_CONCURRENT_STREAMS))
    k.expect(
        s.get(MAX_HEADER_LIST_SIZE) == MAX_HEADER_BYTES,
        "MAX_HEADER_LIST_SIZE %s, want %d" % (s.get(MAX_HEADER_LIST_SIZE), MAX_HEADER_BYTES),
    )
    k.expect(s.get(NO_RFC7540_PRIORITIES) == 1, "NO_RFC7540_PRIORITIES %s, want 1" % s.get(NO_RFC7540_PRIORITIES))
    k.expect(c.settings_acks >= 1, "our SETTINGS were not acknowledged")
    r = c.fetch(1, "/f/small.bin")
    k.expect(r == (200, SMALL), "GET /f/small.bin: %s" % (r,))
    # POST of one 16384-octet DATA frame (the largest allowed).
    c.send(
        headers(1 + 2, request_block("/len", "POST", extra=[("content-length", "16384")]), end_stream=False),
        frame(DATA, END_STREAM, 3, b"x" * 16384),
    )
    c.pump(lambda: c.done(3), 3)
    k.seen["post_16384"] = (c.status.get(3), c.data.get(3, b"").decode(errors="replace"))
    k.expect(
        (c.status.get(3), c.data.get(3)) == (200, b"16384"),
        "POST /len with one 16384-octet DATA frame: %s" % (k.seen["post_16384"],),
    )
    k.no_goaway(c)
    k.seen["connection"] = c.summary()
    k.served_after()


@scenario
def frame_too_large(k):
    c = Raw(k.addr)
    c.send(
        headers(1, request_block("/len", "POST"), end_stream=False),
        frame(DATA, END_STREAM, 1, b"x" * 16385),
    )
    k.goaway(c, FRAME_SIZE_ERROR)
    k.served_after()


def reset_pairs(first, count, path="/f/big.bin"):
    return b"".join(get(sid, path) + rst(sid, CANCEL) for sid in range(first, first + 2 * count, 2))


@scenario
def rapid_reset(k):
    """CVE-2023-44487: HEADERS + RST_STREAM(CANCEL), 150 times at once."""
    with Bystander(k.addr) as b:
        c = Raw(k.addr, big_window=True)
        c.send(reset_pairs(1, 150))
        g = k.goaway(c, ENHANCE_YOUR_CALM)
        time.sleep(0.2)
    k.bystander(b)
    if g:
        pairs = (g[0] + 1) // 2
        k.seen["pairs_before_goaway"] = pairs
        k.expect(90 <= pairs <= 110, "GOAWAY after %d reset pairs (last stream %d), want about 100" % (pairs, g[0]))
    k.served_after()


@scenario
def reset_budget_earned_back(k):
    """90 rapid resets, 20 streams answered in full, 25 more resets: within
    the budget of 100 only because each answered stream earns one back."""
    c = Raw(k.addr, big_window=True)
    c.send(reset_pairs(1, 90))
    k.expect(c.fetch(181, "/f/small.bin") == (200, SMALL), "GET after 90 resets not answered: %s" % c.summary())
    sid = 183
    for _ in range(20):
        r = c.fetch(sid, "/t")
        if not k.expect(r is not None and r[0] == 200, "stream %d after the resets: %s" % (sid, r)):
            break
        sid += 2
    c.send(reset_pairs(sid, 25))
    sid += 50
    r = c.fetch(sid, "/f/small.bin")
    c.drain(0.2)
    k.seen["connection"] = c.summary()
    k.expect(r == (200, SMALL), "GET after 90+25 resets with 20 answered between: %s" % (r,))
    k.no_goaway(c)
    k.served_after()


def made_you_reset(k, provoke, code):
    """CVE-2025-8671: on each of 150 open streams (POST, body pending), a
    frame the server must answer with RST_STREAM(code)."""
    with Bystander(k.addr) as b:
        c = Raw(k.addr, big_window=True)
        out = b"".join(
            headers(sid, request_block("/len", "POST"), end_stream=False) + provoke(sid)
            for sid in range(1, 301, 2)
        )
        c.send(out)
        g = k.goaway(c, ENHANCE_YOUR_CALM)
        time.sleep(0.2)
    k.bystander(b)
    codes = {code_name(x) for x in c.rst.values()}
    k.seen["rst_streams"] = len(c.rst)
    k.expect(codes <= {code_name(code)}, "RST_STREAM codes %s, want only %s" % (sorted(codes), code_name(code)))
    k.expect(90 <= len(c.rst) <= 101, "%d RST_STREAM before the GOAWAY, want about 100" % len(c.rst))
    if g:
        k.expect(90 * 2 - 1 <= g[0] <= 110 * 2 - 1, "GOAWAY last stream %d, want about 199" % g[0])
    k.served_after()


@scenario
def made_you_reset_window_update(k):
    made_you_reset(k, lambda sid: window_update(sid, 0), PROTOCOL_ERROR)


@scenario
def made_you_reset_priority_length(k):
    made_you_reset(k, lambda sid: frame(PRIORITY, 0, sid, b"\0\0\0\0"), FRAME_SIZE_ERROR)


@scenario
def made_you_reset_priority_self(k):
    made_you_reset(k, lambda sid: frame(PRIORITY, 0, sid, struct.pack(">IB", sid, 15)), PROTOCOL_ERROR)


def flood(k, make, count=1200, setup=b""):
    """`count` frames at once, past the burst of 1000: ENHANCE_YOUR_CALM."""
    with Bystander(k.addr) as b:
        c = Raw(k.addr)
        c.send(setup, b"".join(make(i) for i in range(count)))
        k.goaway(c, ENHANCE_YOUR_CALM)
        time.sleep(0.2)
    k.bystander(b)
    k.served_after()
    return c


@scenario
def flood_ping(k):
    c = flood(k, lambda i: ping(struct.pack(">Q", i)))
    k.seen["ping_acks"] = c.ping_acks
    k.expect(900 <= c.ping_acks <= 1100, "%d PING ACKs before the GOAWAY, want about 1000" % c.ping_acks)


@scenario
def flood_settings(k):
    c = flood(k, lambda i: settings())
    k.expect(c.settings_acks <= 1101, "%d SETTINGS ACKs" % c.settings_acks)


@scenario
def flood_priority(k):
    flood(k, lambda i: frame(PRIORITY, 0, 1 + 2 * (i % 50), struct.pack(">IB", 0, 15)))


@scenario
def flood_priority_update(k):
    flood(k, lambda i: frame(PRIORITY_UPDATE, 0, 0, struct.pack(">I", 1) + b"u=1"))


@scenario
def flood_window_update(k):
    flood(k, lambda i: window_update(0, 1))


@scenario
def flood_empty_data(k):
    flood(
        k,
        lambda i: frame(DATA, 0, 1, b""),
        setup=headers(1, request_block("/len", "POST"), end_stream=False),
    )


@scenario
def flood_unknown_frames(k):
    flood(k, lambda i: frame(0xFA, 0, 0, b"junk"))


@scenario
def pings_within_burst(k):
    """500 PINGs at once: every one answered, no GOAWAY."""
    c = Raw(k.addr)
    c.send(b"".join(ping(struct.pack(">Q", i)) for i in range(500)))
    c.pump(lambda: c.ping_acks >= 500, 3)
    c.drain(0.2)
    k.seen["ping_acks"] = c.ping_acks
    k.expect(c.ping_acks == 500, "%d of 500 PINGs answered" % c.ping_acks)
    k.no_goaway(c)
    r = c.fetch(1, "/f/small.bin")
    k.expect(r == (200, SMALL), "GET after 500 PINGs: %s" % (r,))
    k.seen["connection"] = c.summary()
    k.served_after()


def ping_burst(c, count, first=0):
    """`count` PINGs at once; how many were answered (all, or until the
    GOAWAY and close)."""
    before = c.ping_acks
    c.send(b"".join(ping(struct.pack(">Q", first + i)) for i in range(count)))
    c.pump(lambda: c.ping_acks - before >= count or c.goaways, 3)
    return c.ping_acks - before


@scenario
def calm_refills_over_time(k):
    """The burst of 1000 (our SETTINGS spent one), 1.1 s of rest (about
    110 back at 100/s): 100 more are answered, 200 at once after those are
    not."""
    c = Raw(k.addr)
    # A request first: the connection has been served, so its idle
    # deadline is keep-alive (see idle_after_pings for one that was not).
    r = c.fetch(1, "/t")
    k.expect(r is not None and r[0] == 200, "GET /t: %s" % (r,))
    n1 = ping_burst(c, 999)
    k.expect(n1 == 999 and not c.goaways, "999 PINGs after our SETTINGS: %d answered, GOAWAY %s" % (n1, c.goaways))
    time.sleep(1.1)
    n2 = ping_burst(c, 100, 1000)
    k.expect(n2 == 100 and not c.goaways, "100 PINGs after 1.1 s: %d answered, GOAWAY %s" % (n2, c.goaways))
    ping_burst(c, 200, 2000)
    k.seen["answered"] = [n1, n2]
    k.goaway(c, ENHANCE_YOUR_CALM)
    k.served_after()


@scenario
def idle_after_pings(k):
    """Only PINGs, then 1.5 s of quiet (past the 1 s send timeout, within
    the header timeout): the connection is still open and a request on it
    is served. The Rust test sets keep-alive to 2 s: the connection is then
    closed about 2 s after that answer (whether a GOAWAY came first is
    recorded, RFC 9113 §6.8 SHOULD)."""
    c = Raw(k.addr)
    n = ping_burst(c, 10)
    k.expect(n == 10, "%d of 10 PINGs answered" % n)
    c.drain(1.5)
    k.expect(
        not c.eof,
        "closed %.3f s after the connection opened (only PINGs, no request yet), GOAWAY %s"
        % (c.eof_at or 0, [(l, code_name(x)) for l, x in c.goaways]),
    )
    r = c.fetch(1, "/f/small.bin") if not c.eof else None
    k.expect(r == (200, SMALL), "a request after 1.5 s of quiet: %s" % (r,))
    if r is not None:
        answered = c.elapsed()
        closed = c.closed(4)
        k.seen["idle_close_after_s"] = round(c.eof_at - answered, 3) if closed else None
        k.seen["idle_close_goaway"] = [(l, code_name(x)) for l, x in c.goaways]
        k.expect(
            closed and 1.5 <= c.eof_at - answered <= 3.5,
            "after the answer, closed after %s s, want the 2 s keep-alive" % k.seen["idle_close_after_s"],
        )
    k.seen["connection"] = c.summary()
    k.served_after()


@scenario
def calm_earned_by_data(k):
    """The burst spent (SETTINGS + WINDOW_UPDATE + 998 PINGs), then the
    1 MiB file in 64 DATA frames earns 64 back: 60 PINGs are answered;
    150 more are a flood."""
    c = Raw(k.addr, big_window=True)
    t0 = time.monotonic()
    n1 = ping_burst(c, 998)
    k.expect(n1 == 998 and not c.goaways, "998 PINGs: %d answered, GOAWAY %s" % (n1, c.goaways))
    r = c.fetch(1, "/f/big.bin")
    k.expect(r == (200, BIG), "GET /f/big.bin after the burst: %s" % (r,))
    k.seen["data_frames"] = c.data_frames
    n2 = ping_burst(c, 60, 1000)
    k.seen["answered"] = [n1, n2]
    k.seen["elapsed_before_60"] = round(time.monotonic() - t0, 3)
    k.expect(n2 == 60 and not c.goaways, "60 PINGs after 64 DATA frames: %d answered, GOAWAY %s" % (n2, c.goaways))
    ping_burst(c, 150, 2000)
    k.goaway(c, ENHANCE_YOUR_CALM)
    k.served_after()


def split_block(block, first_len, piece):
    return [block[:first_len]] + [block[i : i + piece] for i in range(first_len, len(block), piece)]


def continued(stream, parts, end_headers):
    """A header block as HEADERS then a CONTINUATION for each further part;
    END_HEADERS on the last one only when `end_headers`."""
    out = headers(stream, parts[0], end_headers=False)
    for i, p in enumerate(parts[1:]):
        last = end_headers and i == len(parts) - 2
        out += frame(CONTINUATION, END_HEADERS if last else 0, stream, p)
    return out


@scenario
def continuation_flood(k):
    """HEADERS without END_HEADERS and 30 CONTINUATIONs: past 16."""
    block = request_block("/f/small.bin", extra=[("x-pad", "a" * 100)])
    parts = split_block(block, 4, 4)[:31]
    with Bystander(k.addr) as b:
        c = Raw(k.addr)
        c.send(continued(1, parts, end_headers=False))
        k.goaway(c, ENHANCE_YOUR_CALM)
        time.sleep(0.2)
    k.bystander(b)
    k.expect(1 not in c.status, "stream 1 was answered")
    k.served_after()


@scenario
def continuation_16_ok(k):
    """HEADERS and exactly 16 CONTINUATIONs: a request like any other."""
    block = request_block("/f/small.bin", extra=[("x-pad", "a" * 200)])
    piece = (len(block) + 16) // 17
    parts = split_block(block, piece, piece)
    k.seen["continuations"] = len(parts) - 1
    c = Raw(k.addr)
    c.send(continued(1, parts, end_headers=True))
    c.pump(lambda: c.done(1), 3)
    k.seen["connection"] = c.summary()
    k.expect(len(parts) - 1 == 16, "the test built %d CONTINUATIONs" % (len(parts) - 1))
    k.expect((c.status.get(1), len(c.data.get(1, b""))) == (200, SMALL), "stream 1: %s" % c.summary())
    k.no_goaway(c)
    k.served_after()


@scenario
def continuation_too_big(k):
    """A header block past 2 x max-header-bytes before END_HEADERS."""
    block = request_block("/f/small.bin") + literal("x-huge", "a" * 90000)
    parts = split_block(block, 16384, 16384)[:5]  # 81920 octets, 4 CONTINUATIONs
    with Bystander(k.addr) as b:
        c = Raw(k.addr)
        c.send(continued(1, parts, end_headers=False))
        k.goaway(c, ENHANCE_YOUR_CALM)
        time.sleep(0.2)
    k.bystander(b)
    k.served_after()


@scenario
def frame_inside_header_block(k):
    block = request_block("/f/small.bin")
    c = Raw(k.addr)
    c.send(headers(1, block[:5], end_headers=False), ping(), frame(CONTINUATION, END_HEADERS, 1, block[5:]))
    k.goaway(c, PROTOCOL_ERROR)
    k.expect(c.ping_acks == 0, "the PING inside the header block was answered")
    k.served_after()


def hpack_error(k, block):
    c = Raw(k.addr)
    c.send(headers(1, block))
    k.goaway(c, COMPRESSION_ERROR)
    k.served_after()


@scenario
def hpack_truncated(k):
    hpack_error(k, b"\x3f")


@scenario
def hpack_index_past_table(k):
    hpack_error(k, hpack_int(200, 7, 0x80) + request_block("/t"))


@scenario
def hpack_table_size_above_4096(k):
    hpack_error(k, hpack_int(8192, 5, 0x20) + request_block("/t"))


@scenario
def header_list_431(k):
    """A 40 KiB header value over CONTINUATIONs (under 2 x 32 KiB encoded):
    431, and the connection goes on."""
    block = request_block("/f/small.bin") + literal("x-big", "v" * 40960)
    parts = split_block(block, 16384, 16384)
    c = Raw(k.addr)
    c.send(continued(1, parts, end_headers=True))
    c.pump(lambda: c.done(1), 3)
    k.seen["stream1"] = c.order[:4]
    k.expect(c.status.get(1) == 431, "stream 1 (40 KiB header): status %s, want 431; %s" % (c.status.get(1), c.tail))
    k.expect(1 in c.ended, "stream 1's 431 did not end the stream (rst %s)" % code_name(c.rst.get(1, -1)))
    r = c.fetch(3, "/f/small.bin")
    k.expect(r == (200, SMALL), "a second request on the connection: %s" % (r,))
    k.no_goaway(c)
    k.seen["connection"] = c.summary()
    k.served_after()


@scenario
def concurrency_refused(k):
    """140 streams for the 1 MiB file at once, not read: from the 129th
    (stream 257) on, RST_STREAM(REFUSED_STREAM)."""
    c = Raw(k.addr)
    c.send(b"".join(get(sid, "/f/big.bin") for sid in range(1, 281, 2)))
    time.sleep(0.3)
    c.pump(lambda: all(s in c.rst for s in range(257, 281, 2)), 3)
    c.drain(0.2)
    refused = sorted(s for s, x in c.rst.items() if x == REFUSED_STREAM)
    k.seen["refused"] = refused
    k.seen["connection"] = c.summary()
    k.expect(refused == list(range(257, 281, 2)), "streams refused: %s, want 257..279" % refused)
    other = {s: code_name(x) for s, x in c.rst.items() if x != REFUSED_STREAM}
    k.expect(not other, "other resets: %s" % other)
    k.expect(c.status.get(1) == 200, "stream 1: status %s" % c.status.get(1))
    answered = [s for s in c.status if s >= 257]
    k.expect(not answered, "refused streams answered: %s" % answered)
    k.no_goaway(c)
    k.served_after()


@scenario
def refused_streams_spend_budget(k):
    """128 streams held open, then 120 more refused at once: the refusals
    spend the reset budget, so about 100 of them close the connection."""
    c = Raw(k.addr)
    c.send(b"".join(get(sid, "/f/big.bin") for sid in range(1, 257, 2)))
    time.sleep(0.2)
    c.send(b"".join(get(sid, "/f/big.bin") for sid in range(257, 257 + 240, 2)))
    g = k.goaway(c, ENHANCE_YOUR_CALM)
    refused = [s for s, x in c.rst.items() if x == REFUSED_STREAM]
    k.seen["refused"] = len(refused)
    k.expect(90 <= len(refused) <= 101, "%d refused before the GOAWAY, want about 100" % len(refused))
    if g:
        k.seen["goaway_last"] = g[0]
    k.served_after()


@scenario
def requests_per_connection(k):
    """1000 streams, then GOAWAY(NO_ERROR, last 1999); later ones ignored."""
    c = Raw(k.addr, big_window=True)
    sid = 1
    t0 = time.monotonic()
    for batch in range(10):
        first = sid
        c.send(b"".join(get(s, "/t") for s in range(first, first + 200, 2)))
        sid += 200
        c.pump(lambda: all(c.done(s) for s in range(first, sid, 2)), 5)
    k.seen["thousand_in"] = round(time.monotonic() - t0, 3)
    c.pump(lambda: bool(c.goaways), 1)
    answered = [s for s in range(1, 2001, 2) if c.status.get(s) == 200 and s in c.ended]
    k.expect(len(answered) == 1000, "%d of 1000 streams answered 200 and ended" % len(answered))
    k.expect(
        [(l, code_name(x)) for l, x in c.goaways][:1] == [(1999, "NO_ERROR")],
        "GOAWAY %s, want [(1999, NO_ERROR)]" % [(l, code_name(x)) for l, x in c.goaways],
    )
    c.send(get(2001, "/t"))
    closed = c.closed(3)
    k.seen["connection"] = c.summary()
    k.expect(2001 not in c.status and 2001 not in c.rst, "stream 2001 (after the GOAWAY) was answered or reset")
    k.expect(closed, "the connection stayed open after the 1000 streams were answered")
    k.expect(len(c.goaways) == 1, "GOAWAY frames: %s" % c.goaways)
    k.served_after()


@scenario
def zero_window(k):
    """SETTINGS_INITIAL_WINDOW_SIZE=0 and 8 streams for the 1 MiB file, no
    WINDOW_UPDATE: no DATA, each stream reset with CANCEL after the send
    timeout (1 s in the test runtime)."""
    with Bystander(k.addr) as b:
        c = Raw(k.addr, client_settings=[(INITIAL_WINDOW_SIZE, 0)])
        c.pump(lambda: c.settings_acks > 0, 2)
        sent_at = c.elapsed()
        c.send(b"".join(get(sid, "/f/big.bin") for sid in range(1, 17, 2)))
        c.pump(lambda: all(s in c.rst for s in range(1, 17, 2)), 4)
        time.sleep(0.1)
    k.bystander(b)
    waits = {s: round(t - sent_at, 3) for s, t in c.rst_at.items()}
    k.seen["rst_after_s"] = waits
    k.seen["connection"] = c.summary()
    k.expect(c.data_frames == 0, "%d DATA frames sent into a zero window" % c.data_frames)
    k.expect(
        {s: code_name(x) for s, x in c.rst.items()} == {s: "CANCEL" for s in range(1, 17, 2)},
        "resets %s, want CANCEL on streams 1..15" % {s: code_name(x) for s, x in c.rst.items()},
    )
    k.expect(all(0.8 <= w <= 3.5 for w in waits.values()), "resets after %s s, want about the 1 s send timeout" % waits)
    k.expect(all(c.status.get(s) == 200 for s in range(1, 17, 2)), "HEADERS: %s" % c.status)
    k.no_goaway(c)
    k.served_after()


@scenario
def no_read(k):
    """A client with a 2^31-1 window asks for 100 MiB and stops reading the
    socket: the others are served meanwhile (the Rust test watches the
    process's peak RSS)."""
    c = Raw(k.addr, big_window=True)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send(b"".join(get(sid, "/f/big.bin") for sid in range(1, 201, 2)))
    with Bystander(k.addr) as b:
        time.sleep(1.5)
    k.bystander(b)
    # Now read what is there: the server has given up, or goes on.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not c.eof:
        f = c.read_frame(deadline)
        if f is None:
            break
    got = sum(len(v) for v in c.data.values())
    k.seen["bytes_read_after"] = got
    k.seen["connection"] = c.summary()
    c.close()
    k.served_after()


def protocol_error(k, code, *chunks, preface=True):
    c = Raw(k.addr, preface=preface)
    c.send(*chunks)
    k.goaway(c, code)
    k.served_after()
    return c


@scenario
def first_frame_not_settings(k):
    c = protocol_error(k, PROTOCOL_ERROR, PREFACE, ping(), preface=False)
    k.expect(c.ping_acks == 0, "the PING before SETTINGS was answered")


@scenario
def push_promise_from_client(k):
    protocol_error(
        k,
        PROTOCOL_ERROR,
        headers(1, request_block("/len", "POST"), end_stream=False),
        frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + request_block("/t")),
    )


@scenario
def even_stream_id(k):
    protocol_error(k, PROTOCOL_ERROR, get(2, "/t"))


@scenario
def data_on_stream_0(k):
    protocol_error(k, PROTOCOL_ERROR, frame(DATA, END_STREAM, 0, b"hi"))


@scenario
def data_on_idle_stream(k):
    protocol_error(k, PROTOCOL_ERROR, frame(DATA, END_STREAM, 5, b"hi"))


@scenario
def window_update_0_on_connection(k):
    protocol_error(k, PROTOCOL_ERROR, window_update(0, 0))


@scenario
def connection_window_overflow(k):
    protocol_error(k, FLOW_CONTROL_ERROR, window_update(0, MAX_WINDOW))


@scenario
def initial_window_too_big(k):
    protocol_error(k, FLOW_CONTROL_ERROR, settings((INITIAL_WINDOW_SIZE, 1 << 31)))


@scenario
def settings_length_not_6n(k):
    protocol_error(k, FRAME_SIZE_ERROR, frame(SETTINGS, 0, 0, b"\0\4\0\0\0"))


@scenario
def ping_length_not_8(k):
    protocol_error(k, FRAME_SIZE_ERROR, frame(PING, 0, 0, b"1234567"))


def malformed(k, *chunks, streams=(1,), then=None):
    """Each stream in `streams` is reset with PROTOCOL_ERROR, unanswered;
    the connection goes on."""
    c = Raw(k.addr)
    c.send(*chunks)
    c.pump(lambda: all(c.done(s) for s in streams), 3)
    nxt = then or max(streams) + 2
    r = c.fetch(nxt, "/f/small.bin")
    c.drain(0.1)
    k.seen["connection"] = c.summary()
    k.seen["order"] = c.order[:12]
    for s in streams:
        k.expect(
            code_name(c.rst.get(s, -1)) == "PROTOCOL_ERROR",
            "stream %d: RST_STREAM %s, want PROTOCOL_ERROR" % (s, code_name(c.rst[s]) if s in c.rst else "none"),
        )
        k.expect(s not in c.status, "stream %d answered %s before/instead of the reset" % (s, c.status.get(s)))
    k.expect(r == (200, SMALL), "the next request on the connection: %s" % (r,))
    k.no_goaway(c)
    k.served_after()


@scenario
def malformed_uppercase_name(k):
    malformed(k, get(1, "/t", extra=[("X-Upper", "1")]))


@scenario
def malformed_connection_header(k):
    malformed(k, get(1, "/t", extra=[("connection", "keep-alive")]))


@scenario
def malformed_te_gzip(k):
    malformed(k, get(1, "/t", extra=[("te", "gzip")]))


@scenario
def malformed_pseudo_after_regular(k):
    pseudo = [(":method", "GET"), (":scheme", "http"), (":authority", "localhost"), ("accept", "*/*"), (":path", "/t")]
    malformed(k, headers(1, request_block("", pseudo=pseudo)))


@scenario
def malformed_missing_path(k):
    pseudo = [(":method", "GET"), (":scheme", "http"), (":authority", "localhost")]
    malformed(k, headers(1, request_block("", pseudo=pseudo)))


@scenario
def malformed_content_length(k):
    """content-length 10 with 5 octets sent; 3 with 5 sent."""
    malformed(
        k,
        headers(1, request_block("/len", "POST", extra=[("content-length", "10")]), end_stream=False),
        frame(DATA, END_STREAM, 1, b"hello"),
        headers(3, request_block("/len", "POST", extra=[("content-length", "3")]), end_stream=False),
        frame(DATA, END_STREAM, 3, b"hello"),
        streams=(1, 3),
    )


@scenario
def host_disagrees_with_authority(k):
    """HEADERS :status 400, DATA without END_STREAM, RST_STREAM PROTOCOL_ERROR."""
    c = Raw(k.addr)
    c.send(get(1, "/t", authority="a.test", extra=[("host", "b.test")]))
    c.pump(lambda: c.done(1), 3)
    r = c.fetch(3, "/f/small.bin")
    c.drain(0.1)
    seq = [w for s, w in c.order if s == 1]
    k.seen["stream1"] = seq
    k.seen["connection"] = c.summary()
    k.expect(
        seq == ["HEADERS:400", "DATA", "RST:PROTOCOL_ERROR"],
        "stream 1 saw %s, want HEADERS :status 400 (no END_STREAM), DATA (no END_STREAM), RST_STREAM PROTOCOL_ERROR" % seq,
    )
    k.expect(r == (200, SMALL), "the next request on the connection: %s" % (r,))
    k.no_goaway(c)
    k.served_after()


def post_body(k, c, sid, size, content_length=False):
    """POSTs `size` octets to /len on `sid` in 16384-octet DATA frames,
    within the server's flow-control windows; stops early if answered."""
    extra = [("content-length", str(size))] if content_length else []
    c.send(headers(sid, request_block("/len", "POST", extra=extra), end_stream=False))
    c.pump(lambda: c.server_settings is not None, 2)
    init = (c.server_settings or {}).get(INITIAL_WINDOW_SIZE, 65535)
    conn_win, stream_win = 65535, init
    credit = {"conn": 0, "stream": 0}
    orig = c._parse

    def parse(head, body):
        f = orig(head, body)
        if isinstance(f, WindowUpdateFrame):
            key = "conn" if f.stream_id == 0 else ("stream" if f.stream_id == sid else None)
            if key:
                credit[key] += f.window_increment
        return f

    c._parse = parse
    sent = 0
    deadline = time.monotonic() + 5
    try:
        while sent < size and not c.done(sid) and time.monotonic() < deadline:
            room = min(conn_win + credit["conn"], stream_win + credit["stream"]) - sent
            if room <= 0:
                c.read_frame(time.monotonic() + 0.2)
                if c.eof:
                    break
                continue
            n = min(16384, room, size - sent)
            end = sent + n == size
            if not c.send(frame(DATA, END_STREAM if end else 0, sid, b"b" * n)):
                break
            sent += n
            while c.buf or c._readable():
                if c.read_frame(time.monotonic()) is None:
                    break
    finally:
        c._parse = orig
    c.pump(lambda: c.done(sid), 3)
    return sent


def _readable(self):
    import select

    return bool(select.select([self.sock], [], [], 0)[0])


Raw._readable = _readable


@scenario
def body_1mib_ok(k):
    """A 1 MiB body (the limit) in 16384-octet DATA frames: 200."""
    c = Raw(k.addr)
    sent = post_body(k, c, 1, BIG)
    k.seen["sent"] = sent
    k.seen["connection"] = c.summary()
    k.expect(
        (c.status.get(1), c.data.get(1)) == (200, str(BIG).encode()),
        "POST of 1 MiB: status %s body %r" % (c.status.get(1), c.data.get(1, b"")[:40]),
    )
    k.no_goaway(c)
    k.served_after()


@scenario
def body_over_1mib_413(k):
    """A body past 1 MiB (no content-length): 413; the connection goes on."""
    c = Raw(k.addr)
    sent = post_body(k, c, 1, BIG + 32768)
    k.seen["sent"] = sent
    k.expect(c.status.get(1) == 413, "POST of 1 MiB + 32 KiB: status %s, want 413; %s" % (c.status.get(1), c.tail))
    r = c.fetch(3, "/f/small.bin")
    k.expect(r == (200, SMALL), "the next request on the connection: %s" % (r,))
    k.no_goaway(c)
    k.seen["connection"] = c.summary()
    k.served_after()


@scenario
def graceful_shutdown(k):
    """Run by the Rust test: READY on stdout once a slow download is in
    flight; the test then shuts the server down. GOAWAY(2^31-1, NO_ERROR)
    and a PING; a request opened then is still served; after our PING ACK,
    GOAWAY(NO_ERROR, last = 3); both streams complete; then the close."""
    idle = Raw(k.addr)  # served once, then idle through the shutdown
    k.expect(idle.fetch(1, "/f/small.bin") == (200, SMALL), "the idle connection's request")
    c = Raw(k.addr)  # default windows: the server waits for our credit
    c.send(get(1, "/f/big.bin"))
    c.pump(lambda: c.data_frames > 0, 3)
    print("READY", flush=True)
    deadline = time.monotonic() + 8
    acked = False
    goaway_at = None
    t_first = None
    while time.monotonic() < deadline and not c.eof:
        c.pump(lambda: False, 0.05)
        if c.goaways and t_first is None:
            t_first = c.elapsed()
        if c.pings and not acked:
            # A new request between the first GOAWAY and our PING ACK.
            c.send(get(3, "/f/small.bin"), ping(c.pings[0], ack=True))
            acked = True
            goaway_at = c.elapsed()
        got = len(c.data.get(1, b""))
        # Credit slowly: 64 KiB per 50 ms.
        if got < BIG and not c.eof:
            c.send(window_update(1, 65536), window_update(0, 65536))
    k.seen["connection"] = c.summary()
    k.seen["first_goaway_at"] = t_first
    k.seen["ping_ack_at"] = goaway_at
    k.seen["pings"] = [p.decode(errors="replace") for p in c.pings]
    gs = [(l, code_name(x)) for l, x in c.goaways]
    k.expect(
        gs == [(MAX_WINDOW, "NO_ERROR"), (3, "NO_ERROR")],
        "GOAWAYs %s, want [(2147483647, NO_ERROR), (3, NO_ERROR)]" % gs,
    )
    k.expect(len(c.pings) == 1, "PINGs from the server: %s" % c.pings)
    k.expect(
        (c.status.get(1), len(c.data.get(1, b"")), 1 in c.ended) == (200, BIG, True),
        "the in-flight download: status %s, %d bytes, ended %s" % (c.status.get(1), len(c.data.get(1, b"")), 1 in c.ended),
    )
    k.expect(
        (c.status.get(3), len(c.data.get(3, b""))) == (200, SMALL),
        "stream 3 (opened after the first GOAWAY): %s %d" % (c.status.get(3), len(c.data.get(3, b""))),
    )
    k.expect(c.eof, "the connection was not closed after both streams completed")
    idle_closed = idle.closed(2)
    k.seen["idle"] = idle.summary()
    k.expect(idle_closed, "the idle connection was not closed by the shutdown")
    bad = [(l, code_name(x)) for l, x in idle.goaways if x != NO_ERROR]
    k.expect(not bad, "the idle connection got GOAWAY %s" % bad)
    try:
        late = socket.create_connection(k.addr, timeout=1)
        late.sendall(PREFACE + settings())
        late.settimeout(1)
        k.seen["connect_after_shutdown"] = "accepted, read %r" % late.recv(64)[:16]
        late.close()
    except OSError as e:
        k.seen["connect_after_shutdown"] = repr(e)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(SCENARIOS))
        return 0
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        print("usage: attacks.py HOST PORT SCENARIO  (--list for the names)", file=sys.stderr)
        return 2
    host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    k = Check((host, port))
    t0 = time.monotonic()
    try:
        SCENARIOS[name](k)
    except Exception as e:
        import traceback

        k.failures.append("exception: %s" % "".join(traceback.format_exception(e)).strip())
    out = {
        "scenario": name,
        "ok": not k.failures,
        "failures": k.failures,
        "elapsed_s": round(time.monotonic() - t0, 3),
        "seen": k.seen,
    }
    print(json.dumps(out, default=repr))
    return 0 if not k.failures else 1


if __name__ == "__main__":
    sys.exit(main())
