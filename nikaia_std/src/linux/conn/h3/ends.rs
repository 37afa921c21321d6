//! How an HTTP/3 answer ends early: a stream that made no progress for
//! send-timeout, a producer that failed, a file cut short — each stream
//! reset and stopped, the failure counted and logged, and the
//! connection's other streams going on.

use super::send::{stream_id, Source};
use super::H3;
use crate::http::h3::frame::Code;
use quinn_proto::{Connection, VarInt};
use rustix::io::Errno;
use std::sync::atomic::Ordering::Relaxed;

impl H3 {
    /// Answers that made no progress for send-timeout: their streams are
    /// reset with H3_REQUEST_CANCELLED; the connection goes on.
    pub(super) fn stalled(&mut self, conn: &mut Connection, turn: &mut super::Turn<'_>) {
        let limit = turn.rt.send_timeout;
        let mut i = 0;
        while i < self.bodies.len() {
            let b = &self.bodies[i];
            if !b.clocked() || turn.now.saturating_duration_since(b.progress) < limit {
                i += 1;
                continue;
            }
            let mut body = self.bodies.swap_remove(i);
            if let Source::Produced(p) = &mut body.source {
                p.why = crate::http::Cancelled::TimedOut;
            }
            self.reset_stream(conn, body.stream, Code::RequestCancelled);
            let stats = &turn.shared.stats;
            stats.h3.stalled.fetch_add(1, Relaxed);
            stats.send_timeouts.fetch_add(1, Relaxed);
            if let Some(unlogged) = stats.send_timeouts_logged.pass() {
                turn.shared.logs.error(format_args!(
                    "{}: HTTP/3 stream {} reset: no progress for send-timeout ({limit:?}); \
                     the connection's other streams go on{unlogged}",
                    self.peer, body.stream,
                ));
            }
        }
    }

    /// Resets our side of a request stream and stops the client's.
    pub(super) fn reset_stream(&mut self, conn: &mut Connection, stream: u64, code: Code) {
        if let Some(sid) = stream_id(stream) {
            let code = VarInt::from_u64(code.value()).unwrap_or(VarInt::from_u32(0));
            let _ = conn.send_stream(sid).reset(code);
            let _ = conn.recv_stream(sid).stop(code);
        }
        self.drop_body(stream);
        self.recv_over(stream);
        self.send_over(stream);
    }

    /// A produced body's producer failed: its stream is reset and the
    /// failure logged; the others go on.
    pub(super) fn produced_failed(
        &mut self,
        conn: &mut Connection,
        turn: &super::Turn<'_>,
        i: usize,
        why: String,
    ) {
        let body = self.bodies.swap_remove(i);
        self.reset_stream(conn, body.stream, Code::InternalError);
        turn.shared.logs.error(format_args!(
            "{}: a produced body on HTTP/3 stream {} ended short: {why}; stream reset",
            self.peer, body.stream
        ));
    }

    /// A file body ended early or failed: its stream is reset and the
    /// failure logged; the others go on.
    pub(super) fn file_failed(
        &mut self,
        conn: &mut Connection,
        turn: &super::Turn<'_>,
        i: usize,
        cause: Option<Errno>,
    ) {
        let body = self.bodies.swap_remove(i);
        self.reset_stream(conn, body.stream, Code::InternalError);
        turn.shared.stats.truncated.fetch_add(1, Relaxed);
        if let Source::File(f) = &body.source {
            let why = match cause {
                None => "the file ended early (truncated?)".to_owned(),
                Some(errno) => format!("{}", std::io::Error::from(errno)),
            };
            turn.shared.logs.error(format_args!(
                "{}: sending {:?} on HTTP/3 stream {}: {why}; stream reset",
                self.peer, f.name, body.stream
            ));
        }
    }
}
