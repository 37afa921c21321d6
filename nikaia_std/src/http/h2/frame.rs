//! HTTP/2 frames (RFC 9113 §4, §6): the 9-octet header, the types and
//! flags a server reads, the error codes, and the writers for the frames a
//! server sends. Parsing a payload's meaning is the connection's
//! (`conn.rs`); this file only knows the layout.

/// The client's connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header's length.
pub(crate) const HEADER_LEN: usize = 9;
/// The largest frame payload either side starts with, and the largest we
/// accept (we never raise SETTINGS_MAX_FRAME_SIZE).
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The window every stream and the connection start with (§6.9.2).
pub(crate) const DEFAULT_WINDOW: i64 = 65_535;

/// Frame types (§6; PRIORITY_UPDATE: RFC 9218 §7.1).
pub(crate) mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
    pub const PRIORITY_UPDATE: u8 = 0x10;
}

/// Frame flags (§6).
pub(crate) mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Settings identifiers (§6.5.2; NO_RFC7540_PRIORITIES: RFC 9218 §2.1).
pub(crate) mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    pub const NO_RFC7540_PRIORITIES: u16 = 0x9;
}

/// Error codes (§7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ErrorCode {
    NoError = 0x0,
    Protocol = 0x1,
    Internal = 0x2,
    FlowControl = 0x3,
    SettingsTimeout = 0x4,
    StreamClosed = 0x5,
    FrameSize = 0x6,
    RefusedStream = 0x7,
    Cancel = 0x8,
    Compression = 0x9,
    Connect = 0xa,
    EnhanceYourCalm = 0xb,
    InadequateSecurity = 0xc,
    Http11Required = 0xd,
}

impl ErrorCode {
    /// Every code, in number order (the counters' order).
    pub(crate) const ALL: [ErrorCode; 14] = [
        ErrorCode::NoError,
        ErrorCode::Protocol,
        ErrorCode::Internal,
        ErrorCode::FlowControl,
        ErrorCode::SettingsTimeout,
        ErrorCode::StreamClosed,
        ErrorCode::FrameSize,
        ErrorCode::RefusedStream,
        ErrorCode::Cancel,
        ErrorCode::Compression,
        ErrorCode::Connect,
        ErrorCode::EnhanceYourCalm,
        ErrorCode::InadequateSecurity,
        ErrorCode::Http11Required,
    ];

    /// The code's name as RFC 9113 §7 writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorCode::NoError => "NO_ERROR",
            ErrorCode::Protocol => "PROTOCOL_ERROR",
            ErrorCode::Internal => "INTERNAL_ERROR",
            ErrorCode::FlowControl => "FLOW_CONTROL_ERROR",
            ErrorCode::SettingsTimeout => "SETTINGS_TIMEOUT",
            ErrorCode::StreamClosed => "STREAM_CLOSED",
            ErrorCode::FrameSize => "FRAME_SIZE_ERROR",
            ErrorCode::RefusedStream => "REFUSED_STREAM",
            ErrorCode::Cancel => "CANCEL",
            ErrorCode::Compression => "COMPRESSION_ERROR",
            ErrorCode::Connect => "CONNECT_ERROR",
            ErrorCode::EnhanceYourCalm => "ENHANCE_YOUR_CALM",
            ErrorCode::InadequateSecurity => "INADEQUATE_SECURITY",
            ErrorCode::Http11Required => "HTTP_1_1_REQUIRED",
        }
    }
}

/// A frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    /// The stream identifier, its reserved bit cleared (§4.1).
    pub stream: u32,
}

impl Header {
    /// The header at the start of `buf`, if 9 octets are there.
    pub(crate) fn parse(buf: &[u8]) -> Option<Header> {
        let h: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Header {
            len: usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The 9 octets of a frame header.
pub(crate) fn header(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; HEADER_LEN] {
    debug_assert!(len < 1 << 24);
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// Appends a frame header to `out`.
pub(crate) fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&header(len, kind, flags, stream));
}

/// Appends a SETTINGS frame carrying `values`.
pub(crate) fn put_settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    put_header(out, values.len() * 6, kind::SETTINGS, 0, 0);
    for (id, value) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a WINDOW_UPDATE frame.
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends a RST_STREAM frame.
pub(crate) fn put_rst(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    put_header(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&(code as u32).to_be_bytes());
}

/// Appends a GOAWAY frame (no debug data).
pub(crate) fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    put_header(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&(code as u32).to_be_bytes());
}

/// Appends a PING frame (`ack`: the answer to the peer's).
pub(crate) fn put_ping(out: &mut Vec<u8>, payload: [u8; 8], ack: bool) {
    put_header(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(&payload);
}

/// The payload of a frame that may be padded (DATA, HEADERS): without its
/// Pad Length octet and padding; `None` when the padding does not fit
/// (a PROTOCOL_ERROR, §6.1).
pub(crate) fn unpad(h: &Header, payload: &[u8]) -> Option<std::ops::Range<usize>> {
    if !h.has(flag::PADDED) {
        return Some(0..payload.len());
    }
    let (&pad, _) = payload.split_first()?;
    let end = payload.len().checked_sub(1 + usize::from(pad))?;
    Some(1..1 + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_the_reserved_bit_is_ignored() {
        let h = header(16_384, kind::DATA, flag::END_STREAM, 7);
        let parsed = Header::parse(&h).unwrap();
        assert_eq!(
            parsed,
            Header {
                len: 16_384,
                kind: kind::DATA,
                flags: 1,
                stream: 7
            }
        );
        let mut reserved = h;
        reserved[5] |= 0x80;
        assert_eq!(Header::parse(&reserved).unwrap().stream, 7);
        assert!(Header::parse(&h[..8]).is_none());
    }

    #[test]
    fn padding_must_fit_the_payload() {
        let padded = Header {
            len: 0,
            kind: kind::DATA,
            flags: flag::PADDED,
            stream: 1,
        };
        assert_eq!(unpad(&padded, &[2, b'a', b'b', 0, 0]), Some(1..3));
        assert_eq!(unpad(&padded, &[4, b'a', 0, 0]), None);
        assert_eq!(unpad(&padded, &[]), None);
        assert_eq!(unpad(&padded, &[0]), Some(1..1));
    }
}
