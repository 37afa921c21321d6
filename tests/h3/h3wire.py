"""Building blocks of tests/h3/h3client.py (see its header for the usage).

- HTTP/3 frames and QPACK field lines written by hand (QUIC varints, frame
  type + length; QPACK with Required Insert Count 0, so no dynamic table);
- the names of the QUIC transport, HTTP/3 and QPACK error codes;
- `ClientQuic`: aioquic's QuicConnection with run-time additions for the
  attacks (raw frames, withheld ACKs, the peer's CONNECTION_CLOSE as sent);
- `Driver`: one ClientQuic (plus an optional H3Connection) on one connected
  UDP socket, moved forward by a small synchronous select() loop that counts
  the datagrams and bytes each way.

Only aioquic (PyPI, which brings pylsqpack) and the standard library.
"""

import collections
import os
import select
import socket
import ssl
import time

from aioquic import tls
from aioquic.h3.connection import (
    FrameType,
    H3Connection,
    StreamType,
    encode_frame,
    encode_settings,
)
from aioquic.quic import events as qev
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import END_STATES, QuicConnection
from aioquic.buffer import Buffer
from aioquic.quic.packet import QuicFrameType, QuicPacketType, pull_quic_header
from aioquic.quic.packet_builder import QuicPacketBuilderStop

# HTTP/3 frame and stream types (RFC 9114 §7.2, §6.2).
DATA, HEADERS, SETTINGS, GOAWAY, MAX_PUSH_ID = 0x0, 0x1, 0x4, 0x7, 0xD
CONTROL_STREAM, PUSH_STREAM, ENCODER_STREAM, DECODER_STREAM = 0x0, 0x1, 0x2, 0x3
# The first reserved ("grease") frame and stream type, 0x1f * N + 0x21.
RESERVED_TYPE = 0x21

# HTTP/3 application error codes (RFC 9114 §8.1) and QPACK's (RFC 9204 §6).
H3_ERRORS = {
    0x100: "H3_NO_ERROR",
    0x101: "H3_GENERAL_PROTOCOL_ERROR",
    0x102: "H3_INTERNAL_ERROR",
    0x103: "H3_STREAM_CREATION_ERROR",
    0x104: "H3_CLOSED_CRITICAL_STREAM",
    0x105: "H3_FRAME_UNEXPECTED",
    0x106: "H3_FRAME_ERROR",
    0x107: "H3_EXCESSIVE_LOAD",
    0x108: "H3_ID_ERROR",
    0x109: "H3_SETTINGS_ERROR",
    0x10A: "H3_MISSING_SETTINGS",
    0x10B: "H3_REQUEST_REJECTED",
    0x10C: "H3_REQUEST_CANCELLED",
    0x10D: "H3_REQUEST_INCOMPLETE",
    0x10E: "H3_MESSAGE_ERROR",
    0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK",
    0x200: "QPACK_DECOMPRESSION_FAILED",
    0x201: "QPACK_ENCODER_STREAM_ERROR",
    0x202: "QPACK_DECODER_STREAM_ERROR",
}
H3_REQUEST_CANCELLED = 0x10C

# QUIC transport error codes (RFC 9000 §20.1); 0x100-0x1ff is a TLS alert.
TRANSPORT_ERRORS = {
    0x0: "NO_ERROR",
    0x1: "INTERNAL_ERROR",
    0x2: "CONNECTION_REFUSED",
    0x3: "FLOW_CONTROL_ERROR",
    0x4: "STREAM_LIMIT_ERROR",
    0x5: "STREAM_STATE_ERROR",
    0x6: "FINAL_SIZE_ERROR",
    0x7: "FRAME_ENCODING_ERROR",
    0x8: "TRANSPORT_PARAMETER_ERROR",
    0x9: "CONNECTION_ID_LIMIT_ERROR",
    0xA: "PROTOCOL_VIOLATION",
    0xB: "INVALID_TOKEN",
    0xC: "APPLICATION_ERROR",
    0xD: "CRYPTO_BUFFER_EXCEEDED",
    0xE: "KEY_UPDATE_ERROR",
    0xF: "AEAD_LIMIT_REACHED",
    0x10: "NO_VIABLE_PATH",
}


def error_name(code, application):
    """The name of an error code: an HTTP/3 or QPACK one when `application`,
    else a QUIC transport one (CRYPTO_ERROR(alert) for 0x100-0x1ff)."""
    if code is None:
        return None
    if application:
        return H3_ERRORS.get(code, "unknown")
    if 0x100 <= code <= 0x1FF:
        return f"CRYPTO_ERROR(alert {code - 0x100})"
    return TRANSPORT_ERRORS.get(code, "unknown")


# --- QUIC varints, HTTP/3 frames, QPACK field lines -------------------------


def varint(n):
    """A QUIC variable-length integer (RFC 9000 §16)."""
    if n < 0x40:
        return bytes([n])
    if n < 0x4000:
        return (n | 0x4000).to_bytes(2, "big")
    if n < 0x40000000:
        return (n | 0x80000000).to_bytes(4, "big")
    return (n | 0xC000000000000000).to_bytes(8, "big")


def frame(frame_type, payload=b""):
    """An HTTP/3 frame: type, length, payload (RFC 9114 §7.1)."""
    return varint(frame_type) + varint(len(payload)) + payload


def qpack_int(value, prefix_bits, first_byte):
    """A QPACK/HPACK prefixed integer whose first byte carries the pattern
    bits `first_byte` above a `prefix_bits`-bit prefix (RFC 7541 §5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = bytearray([first_byte | limit])
    value -= limit
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def qpack_literal(name, value):
    """A literal field line with a literal name, no Huffman
    (RFC 9204 §4.5.6: 001NHxxx, then the value with a 7-bit length)."""
    return qpack_int(len(name), 3, 0x20) + name + qpack_int(len(value), 7, 0x00) + value


def qpack_static(index):
    """An indexed field line referring to the static table (§4.5.2: 11xxxxxx)."""
    return qpack_int(index, 6, 0xC0)


def field_section(lines):
    """An encoded field section: Required Insert Count 0 and Delta Base 0
    (the dynamic table is never referred to), then the field lines."""
    return b"\x00\x00" + lines


def encode_fields(fields):
    """A HEADERS frame payload for [(name, value)] (bytes or str), every line
    a literal, exactly in the order given."""
    return field_section(b"".join(qpack_literal(to_bytes(n), to_bytes(v)) for n, v in fields))


def to_bytes(s):
    return s if isinstance(s, bytes) else s.encode("latin-1")


def request_fields(method, authority, path, extra=(), scheme="https"):
    """The field list of a request: the four pseudo-headers, then `extra`."""
    fields = [
        (b":method", to_bytes(method)),
        (b":scheme", to_bytes(scheme)),
        (b":authority", to_bytes(authority)),
        (b":path", to_bytes(path)),
    ]
    return fields + [(to_bytes(n), to_bytes(v)) for n, v in extra]


def text(b):
    """Header bytes as a JSON string: latin-1, so each character is one byte
    (lossless; a reader maps each char back to a byte)."""
    return b.decode("latin-1")


# --- The QUIC connection -----------------------------------------------------


class ClientQuic(QuicConnection):
    """aioquic's QuicConnection, patched at run time where its API cannot
    produce what the attacks need. Each addition is an override of one of
    QuicConnection's private methods (aioquic 1.7; the frame handler table
    is built from bound methods in __init__, so overrides take effect):

    - `_write_application`: frames put in `raw_frames` as (type, body bytes)
      go out first, in 1-RTT packets once the handshake is complete, exactly
      as given (no retransmission if lost). This writes NEW_CONNECTION_ID
      with any retire_prior_to, PATH_CHALLENGE floods, empty STREAM frames.
    - `_write_ack_frame`: while `withhold_acks()` returns True, no ACK frame
      goes out in the 1-RTT space (Initial and Handshake ACKs still do).
    - `_handle_connection_close_frame` (with `receive_datagram`): the
      CONNECTION_CLOSE the peer sent is kept in `peer_close` as it arrives
      (aioquic only reports it after the draining period), with its kind
      (transport 0x1c / application 0x1d); a transport APPLICATION_ERROR in
      an Initial or Handshake packet gives way to the application close
      coalesced after it in the same datagram.
    - `_handle_path_response_frame`, `_handle_retire_connection_id_frame`:
      counted in `path_responses` / `retired_seqs` before aioquic's handling.
    - `_replenish_connection_ids`: skipped while `replenish` is False, so
      aioquic issues no connection IDs of its own during a flood.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.raw_frames = collections.deque()
        self.raw_frames_sent = 0
        self.peer_close = None
        self.deferred_close = None
        self.path_responses = []
        self.retired_seqs = []
        self.withhold_acks = None
        self.acks_withheld = 0
        self.replenish = True

    def _write_application(self, builder, network_path, now):
        crypto = self._cryptos.get(tls.Epoch.ONE_RTT)
        if self.raw_frames and self._handshake_complete and crypto and crypto.send.is_valid():
            while self.raw_frames:
                builder.start_packet(QuicPacketType.ONE_RTT, crypto)
                try:
                    while self.raw_frames:
                        frame_type, body = self.raw_frames[0]
                        capacity = len(varint(frame_type)) + len(body)
                        buf = builder.start_frame(frame_type, capacity=capacity)
                        buf.push_bytes(body)
                        self.raw_frames.popleft()
                        self.raw_frames_sent += 1
                except QuicPacketBuilderStop:
                    pass
                if builder.packet_is_empty:
                    break  # the congestion window is full: next time
        super()._write_application(builder, network_path, now)

    def _write_ack_frame(self, builder, space, now):
        if (
            self.withhold_acks is not None
            and space is self._spaces.get(tls.Epoch.ONE_RTT)
            and self.withhold_acks()
        ):
            space.ack_at = None
            self.acks_withheld += 1
            return
        super()._write_ack_frame(builder, space, now)

    def _handle_connection_close_frame(self, context, frame_type, buf):
        start = buf.tell()
        code = buf.pull_uint_var()
        transport = frame_type == QuicFrameType.TRANSPORT_CLOSE
        offending = buf.pull_uint_var() if transport else None
        reason = buf.pull_bytes(buf.pull_uint_var())
        info = {
            "by": "server",
            "kind": "transport" if transport else "application",
            "code": code,
            "code_hex": hex(code),
            "name": error_name(code, not transport),
            "reason": reason.decode("utf-8", "replace"),
            "frame_type": offending,
        }
        if self.peer_close is None:
            self.peer_close = info
        elif self.peer_close["kind"] == "transport" and self.peer_close["code"] == 0xC:
            # The application close this transport APPLICATION_ERROR stood for.
            info["also_sent"] = [self.peer_close]
            self.peer_close = info
        if (
            transport
            and code == 0xC
            and context.epoch != tls.Epoch.ONE_RTT
            and self._close_event is None
        ):
            # RFC 9000 §10.2.3: before the handshake is confirmed, an application
            # close goes out as a transport APPLICATION_ERROR in Initial or
            # Handshake packets, with the real code in a 1-RTT packet of the
            # same datagram. aioquic would stop reading at the first: read on,
            # and close once the datagram is done (receive_datagram below).
            self.deferred_close = info
            return
        buf.seek(start)
        super()._handle_connection_close_frame(context, frame_type, buf)

    def receive_datagram(self, data, addr, now):
        super().receive_datagram(data, addr, now)
        info, self.deferred_close = self.deferred_close, None
        if info is not None and self._close_event is None:
            self._close_event = qev.ConnectionTerminated(
                error_code=info["code"],
                frame_type=info["frame_type"],
                reason_phrase=info["reason"],
            )
            self._close_begin(is_initiator=False, now=now)

    def _handle_path_response_frame(self, context, frame_type, buf):
        start = buf.tell()
        self.path_responses.append(buf.pull_bytes(8))
        buf.seek(start)
        super()._handle_path_response_frame(context, frame_type, buf)

    def _handle_retire_connection_id_frame(self, context, frame_type, buf):
        start = buf.tell()
        self.retired_seqs.append(buf.pull_uint_var())
        buf.seek(start)
        super()._handle_retire_connection_id_frame(context, frame_type, buf)

    def _replenish_connection_ids(self):
        if self.replenish:
            super()._replenish_connection_ids()

    def close_info(self):
        """How the connection ended, or None while it is open: what the server
        sent, else why aioquic closed it itself (by "client")."""
        if self.peer_close is not None:
            return self.peer_close
        ev = self._close_event
        if ev is None:
            return None
        return {
            "by": "client",
            "kind": "transport" if ev.frame_type is not None else "application",
            "code": ev.error_code,
            "code_hex": hex(ev.error_code),
            "name": error_name(ev.error_code, ev.frame_type is None),
            "reason": ev.reason_phrase,
            "frame_type": ev.frame_type,
        }

    @property
    def ended(self):
        return self._state in END_STATES


class H3Client(H3Connection):
    """aioquic's H3Connection without the MAX_PUSH_ID it sends by default: a
    client that allows no push (so a server may never push).

    With `qpack_streams` less than ("encoder", "decoder") it opens only those
    QPACK streams besides its control stream and advertises a dynamic table
    of 0 (RFC 9204 §4.2 lets an endpoint that will not use a stream omit
    it), so an attack can open its extra unidirectional stream within a
    server's credit of 3. Such a connection sends no requests through this
    class (what aioquic would write on a missing stream is dropped)."""

    def __init__(self, quic, qpack_streams=("encoder", "decoder")):
        self._qpack_streams = tuple(qpack_streams)
        lean = set(self._qpack_streams) != {"encoder", "decoder"}
        super().__init__(_SkipMissingStreams(quic) if lean else quic)

    def _init_connection(self):
        self._max_push_id = None
        if set(self._qpack_streams) == {"encoder", "decoder"}:
            super()._init_connection()
            return
        self._max_table_capacity = 0
        self._blocked_streams = 0
        self._local_control_stream_id = self._create_uni_stream(StreamType.CONTROL)
        self._sent_settings = self._get_local_settings()
        self._quic.send_stream_data(
            self._local_control_stream_id,
            encode_frame(FrameType.SETTINGS, encode_settings(self._sent_settings)),
        )
        if "encoder" in self._qpack_streams:
            self._local_encoder_stream_id = self._create_uni_stream(StreamType.QPACK_ENCODER)
        if "decoder" in self._qpack_streams:
            self._local_decoder_stream_id = self._create_uni_stream(StreamType.QPACK_DECODER)


class _SkipMissingStreams:
    """A QuicConnection seen through H3Client: writes to a stream id of None
    (a QPACK stream the lean client did not open) are dropped."""

    def __init__(self, quic):
        self._wrapped = quic

    def __getattr__(self, name):
        return getattr(self._wrapped, name)

    def send_stream_data(self, stream_id, data, end_stream=False):
        if stream_id is not None:
            self._wrapped.send_stream_data(stream_id, data, end_stream)


def parse_hostport(s):
    """'127.0.0.1:4433' or '[::1]:4433' -> (host, port)."""
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def configuration(args, alpn=None):
    """The client's QuicConfiguration from the common options."""
    host = args.authority
    if host.startswith("["):
        host = host[1 : host.index("]")]
    elif host.count(":") == 1:
        host = host.split(":")[0]
    cfg = QuicConfiguration(
        is_client=True,
        alpn_protocols=[alpn or args.alpn],
        server_name=host,
        idle_timeout=30.0,
        max_data=64 << 20,
        max_stream_data=16 << 20,
    )
    if args.insecure:
        cfg.verify_mode = ssl.CERT_NONE
    elif args.cafile:
        cfg.load_verify_locations(cafile=args.cafile)
    return cfg


def long_packet_types(datagram):
    """The types of the long-header packets coalesced in one datagram we
    send (their headers are readable: header protection hides only the low
    bits of the first byte); a short-header (1-RTT) packet ends the list."""
    types = []
    buf = Buffer(data=datagram)
    while not buf.eof() and datagram[buf.tell()] & 0x80:
        start = buf.tell()
        try:
            header = pull_quic_header(buf)
        except ValueError:
            break
        types.append(header.packet_type)
        buf.seek(start + header.packet_length)
    return types


class Driver:
    """One QUIC connection (ClientQuic, plus an H3Client when `h3`) on its own
    connected UDP socket; `pump` moves it forward until a condition holds."""

    def __init__(
        self,
        addr,
        cfg,
        h3=True,
        session_ticket_handler=None,
        qpack_streams=("encoder", "decoder"),
    ):
        family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.addr = addr
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.connect(addr)
        self.sock.setblocking(False)
        self.quic = ClientQuic(configuration=cfg, session_ticket_handler=session_ticket_handler)
        self.qpack_streams = qpack_streams
        self.want_h3 = h3
        self.h3 = None
        self.sent_bytes = self.sent_datagrams = 0
        self.sent_zero_rtt = 0  # 0-RTT packets among them
        self.recv_bytes = self.recv_datagrams = 0
        self.unreachable = 0  # ICMP port unreachable seen (nothing listens)
        self.alpn = None
        self.handshake = False
        self.early_data_accepted = None
        self.session_resumed = None
        self.resets = {}  # stream id -> code of the server's RESET_STREAM
        self.stop_sending = {}  # stream id -> code of the server's STOP_SENDING
        self.pings_acked = set()  # uids of our PINGs the server acknowledged
        self.on_h3_event = None
        self.on_quic_event = None
        self.drop_incoming = None  # callable(data) -> True to drop a datagram

    def connect(self):
        self.quic.connect(self.addr, now=time.monotonic())
        if self.want_h3:
            self.h3 = H3Client(self.quic, self.qpack_streams)
        self.flush()

    def flush(self):
        for data, _ in self.quic.datagrams_to_send(now=time.monotonic()):
            try:
                self.sock.send(data)
            except ConnectionRefusedError:
                self.unreachable += 1
                continue
            except BlockingIOError:
                continue
            self.sent_bytes += len(data)
            self.sent_datagrams += 1
            if data[0] & 0x80:
                self.sent_zero_rtt += long_packet_types(data).count(QuicPacketType.ZERO_RTT)

    def _dispatch(self):
        while True:
            ev = self.quic.next_event()
            if ev is None:
                return
            if isinstance(ev, qev.ProtocolNegotiated):
                self.alpn = ev.alpn_protocol
            elif isinstance(ev, qev.HandshakeCompleted):
                self.handshake = True
                self.alpn = ev.alpn_protocol
                self.early_data_accepted = ev.early_data_accepted
                self.session_resumed = ev.session_resumed
            elif isinstance(ev, qev.StreamReset):
                self.resets[ev.stream_id] = ev.error_code
            elif isinstance(ev, qev.StopSendingReceived):
                self.stop_sending[ev.stream_id] = ev.error_code
            elif isinstance(ev, qev.PingAcknowledged):
                self.pings_acked.add(ev.uid)
            if self.on_quic_event is not None:
                self.on_quic_event(ev)
            if self.h3 is not None:
                for h3_event in self.h3.handle_event(ev) or ():
                    if self.on_h3_event is not None:
                        self.on_h3_event(h3_event)

    def _receive(self):
        for _ in range(64):  # then the loop acknowledges and checks its clocks
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionRefusedError:
                self.unreachable += 1
                continue
            self.recv_bytes += len(data)
            self.recv_datagrams += 1
            if self.drop_incoming is not None and self.drop_incoming(data):
                continue
            self.quic.receive_datagram(data, self.addr, now=time.monotonic())

    def pump(self, until=lambda: False, timeout=1.0):
        """Runs the connection until `until()` is true (returns True), the
        connection has ended or `timeout` seconds passed (returns False)."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            self._dispatch()
            if until():
                return True
            now = time.monotonic()
            if now >= deadline or self.quic._state.name == "TERMINATED":
                return False
            wait = deadline - now
            timer = self.quic.get_timer()
            if timer is not None:
                wait = max(0.0, min(wait, timer - now))
            readable, _, _ = select.select([self.sock], [], [], wait)
            if readable:
                self._receive()
            timer = self.quic.get_timer()
            if timer is not None and time.monotonic() >= timer:
                self.quic.handle_timer(now=time.monotonic())
            self.flush()

    def close(self, code=0, reason=""):
        """Closes the connection politely (if still open) and the socket."""
        if not self.quic.ended:
            self.quic.close(error_code=code, reason_phrase=reason)
            self.flush()
        self.sock.close()

    def counters(self):
        return {
            "sent_bytes": self.sent_bytes,
            "sent_datagrams": self.sent_datagrams,
            "received_bytes": self.recv_bytes,
            "received_datagrams": self.recv_datagrams,
            "icmp_unreachable": self.unreachable,
        }


def new_stream(quic):
    """The id of the next client-initiated bidirectional stream."""
    return quic.get_next_available_stream_id()


def remaining(deadline):
    return max(0.0, deadline - time.monotonic())


def random_cid(n=8):
    return os.urandom(n)
