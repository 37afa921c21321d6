//! An HTTP/2 connection's clocks: the deadline it waits with (send-timeout
//! while answers go out, a body's clocks while one arrives, header-timeout
//! or keep-alive otherwise), and what passing it means (stalled streams
//! reset, the others go on; or the connection closes).

use super::super::{Link, Turn};
use super::H2;
use crate::http::h2::frame::ErrorCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// For a request (header-timeout until the first, then keep-alive).
    Idle,
    /// For the rest of a request (header-timeout).
    Request,
    /// For the client to take what is sent (send-timeout).
    Output,
}

impl H2 {
    /// The connection's next deadline: send-timeout from the stalest
    /// stream's last frame while bodies are sent, header-timeout from when
    /// a request began to arrive, keep-alive from when it became idle (the
    /// first request's header-timeout from the accept, until one came).
    pub(super) fn deadline(&mut self, link: &mut Link, turn: &Turn<'_>) {
        let rt = turn.rt;
        // A body being read has its own clocks (`intake.rs`).
        let body = self.body_deadline(turn);
        if !link.out.is_empty() || link.transport.pending() {
            // The flush moves the deadline on each progress.
            self.waiting = Wait::Output;
            if let Some(body) = body {
                link.deadline = link.deadline.min(body);
            }
            return;
        }
        let state =
            if self.bodies.is_empty() && self.core.open_streams() == 0 && self.rbuf.is_empty() {
                Wait::Idle
            } else if self.bodies.is_empty() {
                Wait::Request
            } else {
                Wait::Output
            };
        if state != self.waiting {
            self.waiting = state;
            self.since = turn.now;
            if state == Wait::Idle {
                link.idle_since = turn.now;
            }
        }
        link.deadline = match (state, body) {
            (Wait::Output, _) => {
                let clocked = self.bodies.iter().filter(|b| b.clocked());
                match clocked.map(|b| b.progress).min() {
                    Some(oldest) => {
                        let send = oldest + rt.send_timeout;
                        body.map_or(send, |body| send.min(body))
                    }
                    // Only answers a sink still works on (a sync): no
                    // clock of the client's runs.
                    None => body.unwrap_or(super::super::sink::never(turn.now)),
                }
            }
            // Bodies arriving, nothing being sent: their clocks alone.
            (_, Some(body)) => body,
            (Wait::Idle, None) if self.served => self.since + rt.keepalive_timeout,
            (Wait::Request, None) if self.served => self.since + rt.header_timeout,
            // Until the first request: header-timeout from the accept.
            _ => self.first_deadline,
        };
    }

    /// The deadline passed. Streams that made no progress for send-timeout
    /// are reset (their siblings go on): how many. 0: the connection itself
    /// timed out and closes.
    pub(in crate::linux::conn) fn expire(&mut self, link: &mut Link, turn: &Turn<'_>) -> usize {
        if !link.out.is_empty() || link.transport.pending() {
            return 0;
        }
        let limit = turn.rt.send_timeout;
        let stalled: Vec<u32> = self
            .bodies
            .iter()
            .filter(|b| b.clocked() && turn.now.saturating_duration_since(b.progress) >= limit)
            .map(|b| b.stream)
            .collect();
        for &stream in &stalled {
            self.forget(stream);
            self.core.reset(stream, ErrorCode::Cancel);
        }
        self.push_output(link);
        self.count(turn);
        stalled.len()
    }
}
