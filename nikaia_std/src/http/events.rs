//! Server-sent events (`spec/http.md`, "Server-sent events"): a produced
//! body of `text/event-stream` that the program feeds from any thread
//! through [`Events`], into a bounded queue std pulls from as the
//! connection takes it.

use super::body::Resume;
use super::produce::{Cancelled, Produced, Producer, Pull, Pulled};
use super::response::{IntoResponse, Response};
use bytes::BytesMut;
use std::sync::{Arc, Mutex};

/// The most an event stream holds for a client that has not taken it:
/// past it, [`Events::send`] says [`EventError::Full`] (the program
/// decides: drop the event, or end the stream).
pub(crate) const QUEUE_MAX: usize = 64 << 10;

/// An event stream's answer, and the handle that feeds it.
///
/// ```no_run
/// use nikaia_std::http::{event_stream, Event, Server};
/// Server::new()
///     .route("/ticks", |_| {
///         let (events, answer) = event_stream();
///         std::thread::spawn(move || {
///             for i in 0.. {
///                 let tick = Event::data(format!("tick {i}")).id(i.to_string());
///                 if events.send(&tick).is_err() {
///                     break; // the client left (or stopped reading)
///                 }
///                 std::thread::sleep(std::time::Duration::from_secs(1));
///             }
///         });
///         answer
///     })
///     .run()
///     .unwrap();
/// ```
pub fn event_stream() -> (Events, Response) {
    let queue = Arc::new(Mutex::new(Queue {
        bytes: BytesMut::new(),
        senders: 1,
        waiting: None,
        closed: None,
    }));
    let events = Events {
        queue: queue.clone(),
    };
    let answer = Produced::new(Stream { queue })
        .content_type("text/event-stream")
        .into_response()
        .header("Cache-Control", "no-store")
        .header("X-Accel-Buffering", "no");
    (events, answer)
}

/// One event: `data` (each of its lines a `data:` line), and optionally
/// an `event` type, an `id` and a `retry` delay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    data: String,
    event: Option<String>,
    id: Option<String>,
    retry_ms: Option<u64>,
}

impl Event {
    /// An event whose data is `data` (several lines are several `data:`
    /// lines; the client joins them with `\n`).
    pub fn data(data: impl Into<String>) -> Event {
        Event {
            data: data.into(),
            ..Event::default()
        }
    }

    /// Its type (the `event:` field; a client's `addEventListener` name).
    pub fn event(mut self, event: impl Into<String>) -> Event {
        self.event = Some(one_line(event.into()));
        self
    }

    /// Its id (`id:`): a reconnecting client sends it as `Last-Event-ID`.
    pub fn id(mut self, id: impl Into<String>) -> Event {
        self.id = Some(one_line(id.into()).replace('\0', ""));
        self
    }

    /// How long a client waits before it reconnects (`retry:`).
    pub fn retry(mut self, ms: u64) -> Event {
        self.retry_ms = Some(ms);
        self
    }

    /// The event as the stream carries it, ended by its blank line.
    fn encode(&self, out: &mut BytesMut) {
        if let Some(id) = &self.id {
            put_field(out, "id", id);
        }
        if let Some(event) = &self.event {
            put_field(out, "event", event);
        }
        if let Some(ms) = self.retry_ms {
            put_field(out, "retry", &ms.to_string());
        }
        for line in self.data.split('\n') {
            put_field(out, "data", line.strip_suffix('\r').unwrap_or(line));
        }
        out.extend_from_slice(b"\n");
    }
}

fn put_field(out: &mut BytesMut, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\n");
}

/// A field that must be one line: line breaks dropped.
fn one_line(s: String) -> String {
    s.replace(['\r', '\n'], "")
}

/// Why an event was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventError {
    /// The stream ended: its client left, reset it, stopped reading for
    /// `send-timeout`, or the server is stopping. Nothing more will go.
    Closed(Cancelled),
    /// [`QUEUE_MAX`] bytes wait for a client that is not taking them.
    Full,
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventError::Closed(why) => write!(f, "the event stream ended ({why:?})"),
            EventError::Full => write!(f, "the event stream's queue is full"),
        }
    }
}

impl std::error::Error for EventError {}

/// The handle that feeds an event stream, from any thread; a clone feeds
/// the same stream. When every handle is dropped, the stream ends (the
/// client sees the answer end, and an `EventSource` reconnects).
pub struct Events {
    queue: Arc<Mutex<Queue>>,
}

struct Queue {
    bytes: BytesMut,
    /// Handles alive.
    senders: usize,
    /// The pull waiting for more.
    waiting: Option<Resume>,
    /// Why the stream ended, once it did.
    closed: Option<Cancelled>,
}

fn lock(q: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    q.lock().unwrap_or_else(|e| e.into_inner())
}

impl Events {
    /// Queues `event` for the client; it goes out when the connection
    /// takes it (at once, if the client is reading).
    pub fn send(&self, event: &Event) -> Result<(), EventError> {
        let mut encoded = BytesMut::new();
        event.encode(&mut encoded);
        self.push(&encoded)
    }

    /// Queues a comment line (`: text`), which clients ignore: it keeps
    /// idle connections through proxies that close quiet ones.
    pub fn comment(&self, text: &str) -> Result<(), EventError> {
        let mut line = BytesMut::new();
        line.extend_from_slice(b": ");
        line.extend_from_slice(one_line(text.to_owned()).as_bytes());
        line.extend_from_slice(b"\n\n");
        self.push(&line)
    }

    /// Whether the stream ended (the client will take nothing more).
    pub fn is_closed(&self) -> bool {
        lock(&self.queue).closed.is_some()
    }

    fn push(&self, bytes: &[u8]) -> Result<(), EventError> {
        let mut q = lock(&self.queue);
        if let Some(why) = q.closed {
            return Err(EventError::Closed(why));
        }
        if q.bytes.len() + bytes.len() > QUEUE_MAX {
            return Err(EventError::Full);
        }
        q.bytes.extend_from_slice(bytes);
        let waiting = q.waiting.take();
        drop(q);
        if let Some(resume) = waiting {
            resume.resume();
        }
        Ok(())
    }
}

impl Clone for Events {
    fn clone(&self) -> Events {
        lock(&self.queue).senders += 1;
        Events {
            queue: self.queue.clone(),
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let mut q = lock(&self.queue);
        q.senders -= 1;
        let waiting = if q.senders == 0 {
            q.waiting.take()
        } else {
            None
        };
        drop(q);
        // The last handle gone: a waiting pull finds the end.
        drop(waiting);
    }
}

/// The stream's producer: what is queued, else the end once no handle
/// is left, else later.
struct Stream {
    queue: Arc<Mutex<Queue>>,
}

impl Producer for Stream {
    fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled {
        let mut q = lock(&self.queue);
        if !q.bytes.is_empty() {
            let n = q.bytes.len().min(pull.room().max(1));
            return Pulled::Piece(q.bytes.split_to(n).freeze());
        }
        if q.senders == 0 {
            return Pulled::End;
        }
        q.waiting = Some(pull.later());
        Pulled::Later
    }

    fn cancel(&mut self, why: Cancelled) {
        let mut q = lock(&self.queue);
        q.closed = Some(why);
        q.bytes.clear();
        q.waiting = None;
    }
}

impl Drop for Stream {
    /// A stream never sent (HEAD, or an answer replaced) is closed too.
    fn drop(&mut self) {
        let mut q = lock(&self.queue);
        q.closed.get_or_insert(Cancelled::Gone);
        q.waiting = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_encoded_line_by_line() {
        let mut out = BytesMut::new();
        Event::data("one\ntwo\r\nthree")
            .event("up\ndate")
            .id("7")
            .retry(1500)
            .encode(&mut out);
        assert_eq!(
            &out[..],
            b"id: 7\nevent: update\nretry: 1500\ndata: one\ndata: two\ndata: three\n\n"
        );
    }
}
