//! The snapshot of a running server's counters that `nikaia explain` reads
//! ([`Report`]), and its JSON form. The live counters are the backend's.

/// A snapshot of a running server's counters: what `nikaia explain` shows
/// an operator. Programs have no use for it (a hit must not change what a
/// program does), so it is reached from [`Running`](crate::http::Running),
/// not from a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    pub uptime_ms: u64,
    /// (vehicle, requests, body bytes) for sendfile, kept mapping, read,
    /// in-memory.
    pub vehicles: Vec<(String, u64, u64)>,
    pub cache_entries: u64,
    pub cache_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_evictions: u64,
    pub cache_invalidations: u64,
    /// `statx` calls that checked a kept name (at most one per name per
    /// worker loop turn; the hits of a turn share it).
    pub cache_checks: u64,
    /// The kept compressed variants (`spec/files.md`).
    pub compressed: CompressedReport,
    /// Sends whose pages were read on the io pool (cold page cache).
    pub cold_reads: u64,
    /// Opens finished on the io pool.
    pub pool_opens: u64,
    /// File bodies cut short after their head went out.
    pub truncated: u64,
    /// Idle connections closed to make room at `max-connections`.
    pub idle_closed: u64,
    /// Connections closed because an answer made no progress for
    /// `send-timeout` (the client stopped reading, or read too slowly).
    pub send_timeouts: u64,
    /// Responses by status class: [1xx, 2xx, 3xx, 4xx, 5xx] (refused
    /// heads included).
    pub statuses: [u64; 5],
    /// Connections open now (plain and TLS).
    pub connections: u64,
    /// Jobs waiting for an io-pool thread now.
    pub pool_queued: u64,
    /// Each `Root::anywhere()` site seen in this process, with its opens.
    pub anywhere: Vec<(String, u64)>,
    /// The HTTPS side, when the server listens with TLS.
    pub tls: Option<TlsReport>,
    /// What HTTP/2 connections did (h2 and h2c).
    pub h2: H2Report,
    /// HTTP/3 over QUIC; all zero while `http3` is off.
    pub h3: H3Report,
    /// What became of request bodies (`spec/http.md`, "Request bodies").
    pub bodies: BodiesReport,
    /// What the directory writer did (`spec/site.md`, "Writes").
    pub writes: WritesReport,
    /// Response bodies programs produced (`spec/http.md`, "Produced
    /// bodies").
    pub produced: ProducedReport,
    /// What the tus endpoint did (`spec/site.md`, "Resumable uploads"),
    /// while `[resumable]` is set.
    pub resumable: Option<ResumableReport>,
    /// WebDAV's locks (`spec/site.md`, "WebDAV class 2: locks"), while
    /// `[webdav-locks]` is set.
    pub locks: Option<LocksReport>,
}

/// What the tus endpoint did: uploads created and completed, bytes that
/// arrived, requests that resumed one or took it over from a request
/// whose client had left, refusals (offset conflicts, checksum
/// mismatches, the rest), uploads expired and terminated; and those
/// pending now with the bytes they announced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumableReport {
    pub created: u64,
    pub completed: u64,
    pub bytes: u64,
    pub resumed: u64,
    pub taken_over: u64,
    pub conflicts: u64,
    pub checksum_mismatches: u64,
    pub expired: u64,
    pub terminated: u64,
    pub refused: u64,
    pub pending: u64,
    pub pending_bytes: u64,
}

/// What became of WebDAV's locks in this process: taken, refreshed,
/// released and expired; `LOCK`s refused (a conflict, a bound), writes
/// refused for a lock's missing token (423); and the locks held now, by
/// every process sharing the locks file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocksReport {
    pub taken: u64,
    pub refreshed: u64,
    pub released: u64,
    pub expired: u64,
    pub refused: u64,
    pub writes_refused: u64,
    pub held: u64,
}

/// What became of produced response bodies: started, the pulls made and
/// the bytes they gave, and how each ended — whole, failed by its
/// producer, or cancelled (the client left or stopped reading, a reset,
/// the server stopping).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducedReport {
    pub started: u64,
    pub pulls: u64,
    pub bytes: u64,
    pub ended: u64,
    pub failed: u64,
    pub cancelled: u64,
}

/// What the directory writer did: files created and replaced, bytes
/// taken into them, names removed, and refusals by status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WritesReport {
    pub created: u64,
    pub replaced: u64,
    /// Bytes of the bodies written to files that took their name.
    pub bytes: u64,
    pub deleted: u64,
    /// Requests refused or failed, by status (only statuses seen).
    pub refused: Vec<(u16, u64)>,
    /// WebDAV requests answered, by method (only methods seen).
    pub dav: Vec<(&'static str, u64)>,
}

/// What became of request bodies, both protocols together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BodiesReport {
    /// Bodies read whole for a handler.
    pub whole: u64,
    /// Bodies fed to a sink as they arrived.
    pub streamed: u64,
    /// Bytes of body handed to handlers and sinks.
    pub bytes: u64,
    /// Bodies refused from their head alone (413, 415, a deny or auth
    /// rule), before any byte of them was read for anyone.
    pub refused: u64,
    /// Bodies no one read, thrown away to keep the connection.
    pub drained: u64,
    /// Bodies ended by a clock (408).
    pub timeouts: u64,
    /// Streamed bodies that ended before their end (the sink's `abort`).
    pub aborted: u64,
    /// Bodies written to files whose name appeared.
    pub files_written: u64,
    /// Bodies to files refused (a precondition, the name, the space, the
    /// cap), before their body or at its end.
    pub files_refused: u64,
    /// Bodies to files that failed (no space mid-body, an I/O error).
    pub files_failed: u64,
}

/// What the table of kept compressed variants holds and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompressedReport {
    pub entries: u64,
    /// Bytes of compressed variants held.
    pub bytes: u64,
    /// Answers sent from a kept variant.
    pub hits: u64,
    /// Lookups of a variant that was not kept (the identity, or a lesser
    /// coding, answered).
    pub misses: u64,
    /// Variants made by the compressor.
    pub made: u64,
    /// Compressions that did not make the file smaller (noted, not kept).
    pub no_gain: u64,
    pub evictions: u64,
    /// Variants dropped because their file changed.
    pub invalidations: u64,
    /// Compressions not queued because the queue was full.
    pub dropped: u64,
}

/// What HTTP/2 connections did (`spec/http2.md`, "What an operator sees").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct H2Report {
    /// Connections that spoke HTTP/2.
    pub connections: u64,
    /// Streams clients opened.
    pub streams: u64,
    /// RST_STREAM frames sent and received.
    pub resets_sent: u64,
    pub resets_received: u64,
    /// GOAWAY frames sent, by error code name (`NO_ERROR`, ...), only the
    /// codes sent at least once.
    pub goaway: Vec<(String, u64)>,
    /// Connections closed for a flood (ENHANCE_YOUR_CALM).
    pub floods: u64,
    /// Streams reset because they made no progress for `send-timeout`.
    pub stalled: u64,
}

/// What QUIC connections and their HTTP/3 did (`spec/http3.md`, "What an
/// operator sees").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct H3Report {
    /// QUIC connections accepted.
    pub connections: u64,
    /// Handshakes refused at `max-connections` (CONNECTION_REFUSED).
    pub refused: u64,
    /// Retry packets sent (address validation).
    pub retries: u64,
    /// Request streams clients opened.
    pub streams: u64,
    /// Streams reset by us, and by the client (RESET_STREAM or
    /// STOP_SENDING).
    pub resets_sent: u64,
    pub resets_received: u64,
    /// Connections closed for a flood (H3_EXCESSIVE_LOAD).
    pub floods: u64,
    /// Streams reset because they made no progress for `send-timeout`.
    pub stalled: u64,
    /// Connections closed with no request head by `header-timeout`.
    pub header_timeouts: u64,
    /// Datagrams read.
    pub datagrams: u64,
    /// Datagrams a worker read for another worker's connection and handed
    /// to it (`spec/http3.md`, "Workers").
    pub handed: u64,
    /// Datagrams dropped because their worker's inbox was full (it is
    /// slow, or gone).
    pub handed_lost: u64,
    /// Times a connection's client address changed (migration, NAT
    /// rebinding).
    pub path_changes: u64,
    /// Stateless resets sent.
    pub stateless_resets: u64,
    /// During an upgrade: datagrams carried to the other process, carried
    /// here from it, and lost on the way (`spec/http3.md`, "Lifecycle").
    pub forwarded: u64,
    pub forwarded_in: u64,
    pub forward_lost: u64,
    /// QUIC connections that finished here after an upgrade's handover.
    pub drained: u64,
}

/// What a TLS listener did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsReport {
    /// Connections open now.
    pub connections: u64,
    /// Handshakes completed without resumption.
    pub handshakes_full: u64,
    /// Handshakes that resumed an earlier session (ticket or session ID).
    pub handshakes_resumed: u64,
    /// Connections ended by a protocol error (most during the handshake).
    pub failures: u64,
    /// Plain HTTP requests answered 400 on the TLS port.
    pub plain_http: u64,
    /// (vehicle, requests, body bytes) through TLS: kept copy, read,
    /// in-memory.
    pub vehicles: Vec<(String, u64, u64)>,
    /// Handshakes refused because no certificate covers the name asked
    /// for (counted in `failures` too).
    pub unrecognized: u64,
    /// The certificates handshakes choose among now.
    pub certificates: Vec<CertReport>,
}

/// One certificate a server holds, as `nikaia explain` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertReport {
    /// Where it comes from: `"file"`.
    pub source: String,
    /// The chain's file.
    pub cert: String,
    /// The names it serves (DNS names, then IP addresses).
    pub names: Vec<String>,
    /// Whether it answers names no pair covers.
    pub default: bool,
    /// The end of its validity, in seconds since the Unix epoch (0: the
    /// certificate does not say).
    pub not_after: u64,
    /// Seconds from the report to `not_after` (negative: expired).
    pub expires_in: i64,
    /// Handshakes completed with it.
    pub handshakes: u64,
    /// ACME only: when it is renewed next (seconds since the Unix epoch; 0
    /// where there is no schedule).
    pub next_renewal: u64,
    /// ACME only: when the CA was last asked for it (0: not yet), and what
    /// went wrong then (empty: nothing).
    pub last_attempt: u64,
    pub last_error: String,
    /// ACME only: orders placed for it, attempts that failed, and the CA's
    /// validations answered.
    pub orders: u64,
    pub failures: u64,
    pub challenges: u64,
}

impl CertReport {
    /// A report of the certificate `cert` from `source` (`file`, `acme`),
    /// every count at zero.
    pub fn new(source: &str, cert: impl Into<String>) -> CertReport {
        CertReport {
            source: source.to_owned(),
            cert: cert.into(),
            ..CertReport::default()
        }
    }
}

impl Report {
    /// The report as one JSON object (what the stats socket sends).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(512);
        s.push_str(&format!("{{\"uptime_ms\":{},\"vehicles\":", self.uptime_ms));
        vehicles_json(&mut s, &self.vehicles);
        s.push_str(&format!(
            ",\"cache\":{{\"entries\":{},\"bytes\":{},\"hits\":{},\"misses\":{},\"evictions\":{},\"invalidations\":{},\"checks\":{}}}",
            self.cache_entries,
            self.cache_bytes,
            self.cache_hits,
            self.cache_misses,
            self.cache_evictions,
            self.cache_invalidations,
            self.cache_checks
        ));
        let z = &self.compressed;
        s.push_str(&format!(
            ",\"compressed\":{{\"entries\":{},\"bytes\":{},\"hits\":{},\"misses\":{},\"made\":{},\"no_gain\":{},\"evictions\":{},\"invalidations\":{},\"dropped\":{}}}",
            z.entries, z.bytes, z.hits, z.misses, z.made, z.no_gain, z.evictions, z.invalidations, z.dropped
        ));
        s.push_str(&format!(
            ",\"cold_reads\":{},\"pool_opens\":{},\"pool_queued\":{},\"truncated\":{},\"idle_closed\":{},\"send_timeouts\":{},\"connections\":{}",
            self.cold_reads,
            self.pool_opens,
            self.pool_queued,
            self.truncated,
            self.idle_closed,
            self.send_timeouts,
            self.connections
        ));
        let [s1, s2, s3, s4, s5] = self.statuses;
        s.push_str(&format!(
            ",\"statuses\":{{\"1xx\":{s1},\"2xx\":{s2},\"3xx\":{s3},\"4xx\":{s4},\"5xx\":{s5}}},\"anywhere\":["
        ));
        for (i, (site, opens)) in self.anywhere.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!(
                "{{\"site\":{},\"opens\":{opens}}}",
                json_string(site)
            ));
        }
        s.push(']');
        let h = &self.h2;
        s.push_str(&format!(
            ",\"h2\":{{\"connections\":{},\"streams\":{},\"resets_sent\":{},\"resets_received\":{},\"floods\":{},\"stalled\":{},\"goaway\":{{",
            h.connections, h.streams, h.resets_sent, h.resets_received, h.floods, h.stalled
        ));
        for (i, (code, count)) in h.goaway.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("{}:{count}", json_string(code)));
        }
        s.push_str("}}");
        let h = &self.h3;
        s.push_str(&format!(
            ",\"h3\":{{\"connections\":{},\"refused\":{},\"retries\":{},\"streams\":{},\"resets_sent\":{},\"resets_received\":{},\"floods\":{},\"stalled\":{},\"header_timeouts\":{},\"datagrams\":{},\"handed\":{},\"handed_lost\":{},\"path_changes\":{},\"stateless_resets\":{},\"forwarded\":{},\"forwarded_in\":{},\"forward_lost\":{},\"drained\":{}}}",
            h.connections, h.refused, h.retries, h.streams, h.resets_sent, h.resets_received,
            h.floods, h.stalled, h.header_timeouts, h.datagrams, h.handed, h.handed_lost, h.path_changes,
            h.stateless_resets, h.forwarded, h.forwarded_in, h.forward_lost, h.drained
        ));
        let b = &self.bodies;
        s.push_str(&format!(
            ",\"bodies\":{{\"whole\":{},\"streamed\":{},\"bytes\":{},\"refused\":{},\"drained\":{},\"timeouts\":{},\"aborted\":{},\"files_written\":{},\"files_refused\":{},\"files_failed\":{}}}",
            b.whole, b.streamed, b.bytes, b.refused, b.drained, b.timeouts, b.aborted,
            b.files_written, b.files_refused, b.files_failed
        ));
        let p = &self.produced;
        s.push_str(&format!(
            ",\"produced\":{{\"started\":{},\"pulls\":{},\"bytes\":{},\"ended\":{},\"failed\":{},\"cancelled\":{}}}",
            p.started, p.pulls, p.bytes, p.ended, p.failed, p.cancelled
        ));
        let w = &self.writes;
        s.push_str(&format!(
            ",\"writes\":{{\"created\":{},\"replaced\":{},\"bytes\":{},\"deleted\":{},\"refused\":{{",
            w.created, w.replaced, w.bytes, w.deleted
        ));
        for (i, (status, count)) in w.refused.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\"{status}\":{count}"));
        }
        s.push_str("},\"dav\":{");
        for (i, (method, count)) in w.dav.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\"{method}\":{count}"));
        }
        s.push_str("}}");
        if let Some(u) = &self.resumable {
            s.push_str(&format!(
                ",\"resumable\":{{\"created\":{},\"completed\":{},\"bytes\":{},\"resumed\":{},\"taken_over\":{},\"conflicts\":{},\"checksum_mismatches\":{},\"expired\":{},\"terminated\":{},\"refused\":{},\"pending\":{},\"pending_bytes\":{}}}",
                u.created, u.completed, u.bytes, u.resumed, u.taken_over, u.conflicts,
                u.checksum_mismatches, u.expired, u.terminated, u.refused, u.pending, u.pending_bytes
            ));
        }
        if let Some(l) = &self.locks {
            s.push_str(&format!(
                ",\"locks\":{{\"taken\":{},\"refreshed\":{},\"released\":{},\"expired\":{},\"refused\":{},\"writes_refused\":{},\"held\":{}}}",
                l.taken, l.refreshed, l.released, l.expired, l.refused, l.writes_refused, l.held
            ));
        }
        if let Some(t) = &self.tls {
            s.push_str(&format!(
                ",\"tls\":{{\"connections\":{},\"handshakes_full\":{},\"handshakes_resumed\":{},\"failures\":{},\"plain_http\":{},\"vehicles\":",
                t.connections, t.handshakes_full, t.handshakes_resumed, t.failures, t.plain_http
            ));
            vehicles_json(&mut s, &t.vehicles);
            s.push_str(&format!(
                ",\"unrecognized\":{},\"certificates\":[",
                t.unrecognized
            ));
            for (i, c) in t.certificates.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let names: Vec<String> = c.names.iter().map(|n| json_string(n)).collect();
                s.push_str(&format!(
                    "{{\"source\":{},\"cert\":{},\"names\":[{}],\"default\":{},\"not_after\":{},\"expires_in\":{},\"handshakes\":{}",
                    json_string(&c.source),
                    json_string(&c.cert),
                    names.join(","),
                    c.default,
                    c.not_after,
                    c.expires_in,
                    c.handshakes
                ));
                if c.source == "acme" {
                    s.push_str(&format!(
                        ",\"next_renewal\":{},\"last_attempt\":{},\"last_error\":{},\"orders\":{},\"failures\":{},\"challenges\":{}",
                        c.next_renewal,
                        c.last_attempt,
                        json_string(&c.last_error),
                        c.orders,
                        c.failures,
                        c.challenges
                    ));
                }
                s.push('}');
            }
            s.push_str("]}");
        }
        s.push('}');
        s
    }
}

fn vehicles_json(s: &mut String, vehicles: &[(String, u64, u64)]) {
    s.push('[');
    for (i, (name, requests, bytes)) in vehicles.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"vehicle\":{},\"requests\":{requests},\"bytes\":{bytes}}}",
            json_string(name)
        ));
    }
    s.push(']');
}

fn json_string(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
