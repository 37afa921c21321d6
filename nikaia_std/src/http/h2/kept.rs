//! A connection's kept header block: HTTP/2's twin of HTTP/1.1's kept
//! head (`spec/http.md`, "Kept heads"). HPACK makes a block depend on the
//! encoder's dynamic table as well as on the fields, so what is kept is
//! the encoded `:status` and the fields after `date`, keyed by the head's
//! inputs ([`Key`]) and by the table's change count: while neither
//! changed, the same fields are the same bytes. The `date` is written for
//! each block (a literal that never enters the table, so its bytes depend
//! on its value alone).

use super::hpack::Encoder;
use crate::http::kept_key::{Inputs, Slot};
use crate::http::request::Version;
use crate::http::response::{each_field, Response};

/// One connection's kept block.
#[derive(Default)]
pub(crate) struct KeptBlock {
    /// Which answer's block is kept.
    slot: Slot,
    /// The encoder's change count both parts were written at.
    changes: u64,
    status: Vec<u8>,
    fields: Vec<u8>,
}

impl KeptBlock {
    /// Writes the response's HEADERS block into `out` (after whatever the
    /// encoder's `begin` put there): the kept parts when the inputs and the
    /// table are as they were, else encoded afresh and, when encoding them
    /// left the table as it was, kept.
    pub(crate) fn block(
        &mut self,
        enc: &mut Encoder,
        out: &mut Vec<u8>,
        body: &[u8],
        resp: &Response,
        length: u64,
        date: &[u8],
    ) {
        let inputs = Inputs {
            resp,
            length,
            date,
            close: false,
            version: Version::Http2,
        };
        let same = self.slot.holds(body, &inputs);
        if same && self.changes == enc.changes() {
            self.slot.given();
            out.extend_from_slice(&self.status);
            enc.field(b"date", date, false, out);
            out.extend_from_slice(&self.fields);
            return;
        }
        let before = enc.changes();
        let start = out.len();
        enc.status(resp.status(), out);
        let status_end = out.len();
        enc.field(b"date", date, false, out);
        let fields_start = out.len();
        write_fields(enc, out, resp, length);
        if enc.changes() != before {
            // Written at a count no later block will see: nothing to keep.
            self.slot.missed();
            return;
        }
        if self.slot.take(same, body, &inputs) {
            self.changes = before;
            self.status.clear();
            self.status.extend_from_slice(&out[start..status_end]);
            self.fields.clear();
            self.fields.extend_from_slice(&out[fields_start..]);
        }
    }

    /// How many blocks were given without being encoded.
    #[cfg(test)]
    pub(crate) fn hits(&self) -> u64 {
        self.slot.hits()
    }
}

/// The response's HEADERS block written afresh: `:status`, `date`, then
/// the fields every backend sends, lowercased, less those HTTP/2 forbids
/// (§8.2.2).
#[cfg(test)]
pub(crate) fn write_block(
    enc: &mut Encoder,
    out: &mut Vec<u8>,
    resp: &Response,
    length: u64,
    date: &[u8],
) {
    enc.status(resp.status(), out);
    enc.field(b"date", date, false, out);
    write_fields(enc, out, resp, length);
}

/// The fields after `date`.
fn write_fields(enc: &mut Encoder, out: &mut Vec<u8>, resp: &Response, length: u64) {
    let mut lower = Vec::with_capacity(32);
    each_field(resp, length, |name, value| {
        lower.clear();
        lower.extend(name.iter().map(u8::to_ascii_lowercase));
        let index = match lower.as_slice() {
            b"keep-alive" | b"transfer-encoding" | b"upgrade" | b"proxy-connection" => return,
            // RFC 7541 §7.1.3: a secret no table on the way should keep.
            b"set-cookie" | b"authorization" | b"proxy-authenticate" => {
                return enc.field_never_indexed(&lower, value, out);
            }
            b"server"
            | b"content-type"
            | b"accept-ranges"
            | b"cache-control"
            | b"vary"
            | b"content-encoding"
            | b"x-content-type-options" => true,
            _ => false,
        };
        enc.field(&lower, value, index, out);
    });
}

#[cfg(test)]
mod tests;
