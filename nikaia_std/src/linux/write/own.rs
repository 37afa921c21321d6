//! What the runtime file keeps from every write of the directory writer
//! (`spec/site.md`, "Writes"): its own files, found by identity when a
//! write acts; and the site's answers to those writes, dressed by the
//! site's rules and counted for `nikaia explain`.

use super::Wing;
use crate::fs::{self, Root, Written};
use crate::http::site::write::{self, Permit};
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

/// What the runtime file names, which no write may touch: paths on the
/// machine, and names under the served directory.
#[derive(Default)]
pub(crate) struct Own {
    paths: Vec<PathBuf>,
    names: Vec<String>,
}

impl Own {
    /// What `rt` names, for a write of the directory writer (`site`);
    /// nothing for a program's own.
    pub(crate) fn of(rt: &Runtime, site: bool) -> Own {
        if !site {
            return Own::default();
        }
        Own {
            paths: write::own_files(rt),
            names: write::own_names(rt)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Their (device, inode) now: each path as it is and as its links lead,
    /// each name as it opens under `root`. It may wait for the disk.
    pub(crate) fn identities(&self, root: &Root) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for path in &self.paths {
            let seen = [std::fs::metadata(path), std::fs::symlink_metadata(path)];
            out.extend(seen.into_iter().flatten().map(|m| (m.dev(), m.ino())));
        }
        for name in &self.names {
            if let Ok(opened) = root.open(name) {
                out.push((opened.id.dev, opened.id.ino));
            }
        }
        out
    }
}

/// A refusal of a site write (or the cap's 503 for any write), dressed
/// and counted.
pub(super) fn answer_refusal(
    rt: &Runtime,
    req: &Request,
    permit: Option<&Permit>,
    mut resp: Response,
) -> Response {
    if let Some(p) = permit {
        write::dress_answer(rt, req, p, &mut resp);
    }
    resp
}

/// The answer to a site write once the file system acted, counted.
pub(super) fn answered(
    wing: &Wing,
    req: &Request,
    permit: &Permit,
    done: Result<Written, fs::Error>,
) -> Response {
    let stats = &wing.writes;
    match &done {
        Ok(w) if w.created => stats.created.fetch_add(1, Relaxed),
        Ok(_) => stats.replaced.fetch_add(1, Relaxed),
        Err(_) => 0,
    };
    if let Ok(w) = &done {
        stats.bytes.fetch_add(w.id.size, Relaxed);
    }
    let rt = wing.runtime();
    let resp = write::answer(&rt, req, permit, done.map(Some));
    if resp.status() >= 400 {
        stats.refused(resp.status());
    }
    resp
}
