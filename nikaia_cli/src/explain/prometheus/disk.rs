//! What went to disk, in Prometheus's text format: the directory
//! writer's uploads and refusals, WebDAV's requests, the tus endpoint's
//! uploads and WebDAV's locks.

use super::{n, Exposition};
use serde_json::Value;

/// The writes wing's families.
pub(super) fn writes(p: &mut Exposition, r: &Value) {
    let w = &r["writes"];
    if w.is_object() {
        p.counter(
            "nikaia_uploads_total",
            "What the directory writer did: files created, files replaced, names deleted.",
            ["created", "replaced", "deleted"]
                .iter()
                .map(|outcome| (vec![("outcome", outcome.to_string())], n(&w[*outcome])))
                .collect(),
        );
        p.counter(
            "nikaia_upload_bytes_total",
            "Bytes of request bodies written to files that took their name, by the directory writer.",
            vec![(vec![], n(&w["bytes"]))],
        );
        let refused = w["refused"].as_object().map(|m| {
            m.iter()
                .map(|(status, count)| (vec![("status", status.clone())], n(count)))
                .collect::<Vec<_>>()
        });
        p.counter(
            "nikaia_upload_refusals_total",
            "Writes and deletes of the directory writer refused or failed, by status.",
            refused.unwrap_or_default(),
        );
        let dav = w["dav"].as_object().map(|m| {
            m.iter()
                .map(|(method, count)| (vec![("method", method.clone())], n(count)))
                .collect::<Vec<_>>()
        });
        p.counter(
            "nikaia_webdav_requests_total",
            "WebDAV requests the directory writer answered, by method (refusals are counted by status in nikaia_upload_refusals_total).",
            dav.unwrap_or_default(),
        );
    }
    let u = &r["resumable"];
    if u.is_object() {
        p.counter(
            "nikaia_resumable_uploads_total",
            "What the tus endpoint did with uploads: created, completed (the file named), resumed (a PATCH past offset 0), taken over from a request whose client left, expired, terminated.",
            ["created", "completed", "resumed", "taken_over", "expired", "terminated"]
                .iter()
                .map(|event| (vec![("event", event.to_string())], n(&u[*event])))
                .collect(),
        );
        p.counter(
            "nikaia_resumable_bytes_total",
            "Bytes of uploads that arrived at the tus endpoint.",
            vec![(vec![], n(&u["bytes"]))],
        );
        p.counter(
            "nikaia_resumable_refusals_total",
            "Requests of the tus endpoint refused: an offset conflict (409), a checksum mismatch (460), any other.",
            [("conflict", "conflicts"), ("checksum", "checksum_mismatches"), ("other", "refused")]
                .iter()
                .map(|(reason, key)| (vec![("reason", reason.to_string())], n(&u[*key])))
                .collect(),
        );
        p.gauge(
            "nikaia_resumable_pending",
            "Uploads not yet complete.",
            n(&u["pending"]),
        );
        p.gauge(
            "nikaia_resumable_pending_bytes",
            "The lengths announced by uploads not yet complete.",
            n(&u["pending_bytes"]),
        );
    }
    let l = &r["locks"];
    if l.is_object() {
        p.counter(
            "nikaia_webdav_locks_total",
            "What became of WebDAV locks in this process: taken, refreshed, released, expired.",
            ["taken", "refreshed", "released", "expired"]
                .iter()
                .map(|event| (vec![("event", event.to_string())], n(&l[*event])))
                .collect(),
        );
        p.counter(
            "nikaia_webdav_lock_refusals_total",
            "LOCKs refused (a conflicting lock, 423, or a bound, 503), and writes refused because a lock's token was not submitted (423).",
            [("lock", "refused"), ("write", "writes_refused")]
                .iter()
                .map(|(what, key)| (vec![("refused", what.to_string())], n(&l[*key])))
                .collect(),
        );
        p.gauge(
            "nikaia_webdav_locks_held",
            "WebDAV locks held now, by every process sharing the locks file.",
            n(&l["held"]),
        );
    }
}
