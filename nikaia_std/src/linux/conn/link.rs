//! A connection's side of the socket, whatever its protocol: reading
//! through the transport (a TLS session's failures counted and logged),
//! flushing the send queue within the turn's budget (a produced body's
//! pulls resumed through the mailbox), the work handed off the loop (cold
//! file pages, opens, credential checks), and the gentle close.

use super::*;

/// The maker of the handles that have a produced body at `conn` (its
/// `stream` on HTTP/2, 0 on HTTP/1.1) pulled again: each posts to the
/// worker's mailbox when resumed or dropped.
pub(super) fn puller(
    turn: &Turn<'_>,
    conn: u64,
    stream: u32,
) -> impl FnMut() -> crate::http::body::Resume {
    let (mailbox, slot) = (turn.mailbox.clone(), turn.slot);
    move || {
        let mailbox = mailbox.clone();
        let pull = IoDone::Pull { slot, conn, stream };
        crate::http::body::Resume::new(move || mailbox.post(pull))
    }
}

impl Link {
    pub(super) fn flush(
        &mut self,
        turn: &mut Turn<'_>,
        budget: &mut usize,
        slice_end: Instant,
    ) -> Result<Flushed, SendError> {
        let mut progress = false;
        let mut make = puller(turn, self.id, 0);
        let access = &mut *turn.access;
        let log_on = turn.shared.logs.access.is_on();
        let format = turn.rt.access_log_format;
        let stats = &turn.shared.stats;
        let tls = self.transport.encrypts();
        let done = |sent: &Sent| {
            stats.record(sent.vehicle, sent.bytes, tls);
            stats.status(sent.status);
            if log_on {
                access::sent(access, format, sent, tls, Instant::now());
            }
        };
        let r = self.out.flush(
            &mut self.transport,
            budget,
            slice_end,
            &mut progress,
            done,
            &mut make,
        );
        if progress {
            self.deadline = turn.now + turn.rt.send_timeout;
        }
        r
    }

    /// Reads what the transport has into `buf`: `Ok` with data, or with a
    /// plain request on the TLS listener (the protocol refuses it);
    /// `Err(Wait)` when there is nothing yet; `Err(Close)` at EOF, on an
    /// error, for a TLS client on a plain listener, or a failed session.
    pub(super) fn read(
        &mut self,
        turn: &mut Turn<'_>,
        buf: &mut bytes::BytesMut,
    ) -> Result<Input, Next> {
        if self.proxy_header {
            match self.transport.proxy_header() {
                ProxyRead::Done(source) => {
                    self.proxy_header = false;
                    if let crate::http::proxy::Source::Addr(addr) = source {
                        self.client = Peer::Tcp(addr);
                    }
                }
                ProxyRead::Need => return Err(Next::Wait),
                ProxyRead::Closed => return Err(Next::Close),
                ProxyRead::Bad(why) => {
                    turn.shared.logs.error(format_args!(
                        "{}: closed: no valid PROXY protocol header ({why})",
                        self.peer
                    ));
                    return Err(Next::Close);
                }
            }
        }
        let input = self.transport.read(buf);
        if let Input::Data | Input::PlainOnTls = input {
            turn.window.bytes_read();
        }
        if let (Some(kind), Some(tls)) = (self.transport.established(), &turn.shared.tls) {
            let counter = match kind {
                rustls::HandshakeKind::Resumed => &tls.counters.resumed,
                _ => &tls.counters.full,
            };
            counter.fetch_add(1, Relaxed);
        }
        match input {
            Input::Data | Input::PlainOnTls => Ok(input),
            Input::Blocked => Err(Next::Wait),
            Input::Closed | Input::TlsOnPlain => Err(Next::Close),
            Input::Failed { error, handshake } => {
                let stage = if handshake { "handshake" } else { "session" };
                self.tls_failure(turn, format_args!("TLS {stage} failed: {error}"));
                Err(Next::Close)
            }
            Input::Unrecognized { name } => {
                if let Some(tls) = &turn.shared.tls {
                    tls.counters.unrecognized.fetch_add(1, Relaxed);
                }
                // A name ACME is still obtaining a certificate for: a line
                // once per name, not a failure.
                if let Some(log) = turn.shared.challenges.refusal_to_log(&name) {
                    if log {
                        turn.shared.logs.error(format_args!(
                            "{}: TLS handshake for {name:?} refused: its certificate is not obtained yet (ACME; `nikaia explain` shows the next attempt)",
                            self.peer
                        ));
                    }
                    return Err(Next::Close);
                }
                self.tls_failure(
                    turn,
                    format_args!(
                        "TLS handshake refused: no certificate covers {name:?} (unrecognized_name)"
                    ),
                );
                Err(Next::Close)
            }
        }
    }

    /// Counts a connection the TLS session ended and logs `what` (at most
    /// a line per 10 s, with how many were left out).
    pub(super) fn tls_failure(&self, turn: &Turn<'_>, what: std::fmt::Arguments<'_>) {
        if let Some(tls) = &turn.shared.tls {
            if let Some(unlogged) = tls.failure_to_log() {
                turn.shared.logs.error(format_args!(
                    "{}: {what}{}",
                    self.peer,
                    unlogged.of("failures")
                ));
            }
        }
    }

    /// Reads cold file pages on the io pool (D9); the send resumes when they
    /// arrive.
    pub(super) fn read_on_pool(
        &mut self,
        turn: &mut Turn<'_>,
        file: Arc<nfs::OpenFile>,
        offset: u64,
        len: usize,
        stream: u32,
    ) {
        read_on_pool(turn, self.id, file, offset, len, stream);
    }

    /// Runs the pipeline's job (an open, a listing) on the io pool; the
    /// answer goes on in [`Conn::io_done`].
    pub(super) fn open_on_pool(&mut self, turn: &mut Turn<'_>, job: Job, stream: u32) {
        open_on_pool(turn, self.id, job, stream);
        self.deadline = turn.now + turn.rt.send_timeout;
    }

    /// Checks credentials on the verifier threads; the answer goes on in
    /// [`Conn::io_done`]. `Err`: too many checks wait (the check comes
    /// back, to be answered 503).
    pub(super) fn verify_off_loop(
        &mut self,
        turn: &mut Turn<'_>,
        check: Box<Check>,
        stream: u32,
    ) -> Result<(), Box<Check>> {
        verify_off_loop(turn, self.id, check, stream)?;
        self.deadline = turn.now + turn.rt.send_timeout;
        Ok(())
    }

    pub(super) fn log_send_error(&self, turn: &Turn<'_>, e: SendError) {
        if let SendError::Produced(why) = &e {
            turn.shared.logs.error(format_args!(
                "{}: a produced body ended short: {why}; connection closed",
                self.peer
            ));
            return;
        }
        if let SendError::File {
            name,
            sent,
            promised,
            cause,
        } = e
        {
            turn.shared.stats.truncated.fetch_add(1, Relaxed);
            let why = match cause {
                None => "the file ended early (truncated?)".to_owned(),
                Some(errno) => format!("{}", std::io::Error::from(errno)),
            };
            turn.shared.logs.error(format_args!(
                "{}: sending {name:?}: {why}; sent {sent} of {promised} bytes, connection closed",
                self.peer
            ));
        }
    }
}

/// Everything is written and the connection is to close: send the FIN,
/// then drain what the client still sends until EOF or [`LINGER`], so the
/// last answer is not destroyed by a reset.
pub(super) fn close_gently(link: &mut Link, turn: &Turn<'_>) -> Next {
    if !link.lingering {
        match link.transport.close_write() {
            Ok(true) => {}
            Ok(false) => return Next::Wait,
            Err(_) => return Next::Close,
        }
        link.lingering = true;
        link.deadline = turn.now + LINGER;
    }
    match link.transport.discard() {
        true => Next::Close,
        false => Next::Wait,
    }
}

/// Reads cold file pages of connection `conn`'s `stream` on the io pool
/// (D9); the result comes back through the worker's mailbox.
pub(super) fn read_on_pool(
    turn: &Turn<'_>,
    conn: u64,
    file: Arc<nfs::OpenFile>,
    offset: u64,
    len: usize,
    stream: u32,
) {
    turn.shared.stats.cold_reads.fetch_add(1, Relaxed);
    let mailbox = turn.mailbox.clone();
    let slot = turn.slot;
    let len = len.min(COLD_READ);
    turn.shared.pool.submit(move || {
        let mut data = vec![0u8; len];
        let result = nfs::read_full_at(&file, &mut data, offset).map(|got| {
            data.truncate(got);
            data
        });
        mailbox.post(IoDone::Read {
            slot,
            conn,
            stream,
            result: result.map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO)),
        });
    });
}

/// Runs a request's pipeline job (an open, a listing) on the io pool.
pub(super) fn open_on_pool(turn: &Turn<'_>, conn: u64, job: Job, stream: u32) {
    turn.shared.stats.pool_opens.fetch_add(1, Relaxed);
    let mailbox = turn.mailbox.clone();
    let slot = turn.slot;
    turn.shared.pool.submit(move || {
        let fetched = job.run();
        mailbox.post(IoDone::Opened {
            slot,
            conn,
            stream,
            fetched,
        });
    });
}

/// Checks a request's credentials on the verifier threads. `Err`: too
/// many checks wait (the check comes back, to be answered 503).
pub(super) fn verify_off_loop(
    turn: &Turn<'_>,
    conn: u64,
    check: Box<Check>,
    stream: u32,
) -> Result<(), Box<Check>> {
    let mailbox = turn.mailbox.clone();
    let slot = turn.slot;
    turn.shared.auth.submit(check, move |check, verdict| {
        mailbox.post(IoDone::Verified {
            slot,
            conn,
            stream,
            check,
            verdict,
        });
    })
}
