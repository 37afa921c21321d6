//! `nikaia compress DIR`: writes the precompressed sidecars `nikaia serve`
//! answers with (`NAME.br`, `NAME.zst`, `NAME.gz`; `spec/files.md`,
//! "Precompressed sidecars").
//!
//! A sidecar is written to a temporary name in its directory and renamed
//! into place: a missing one with `RENAME_NOREPLACE` (whatever appeared
//! meanwhile is kept), a stale one (older than its file) over itself. Any
//! other file is never replaced, truncated or removed.

use nikaia_std::rt::Coding;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct CompressArgs {
    /// The directory whose files get sidecars (recursively)
    pub dir: PathBuf,
}

#[derive(Default)]
struct Tally {
    created: u64,
    replaced: u64,
    current: u64,
    not_smaller: u64,
    left: u64,
    errors: u64,
}

pub fn run(args: CompressArgs) -> u8 {
    let mut tally = Tally::default();
    if let Err(e) = fs::read_dir(&args.dir) {
        eprintln!("nikaia compress: {}: {e}", args.dir.display());
        return 1;
    }
    walk(&args.dir, Path::new(""), &mut tally);
    println!(
        "{} created, {} replaced (stale), {} up to date, {} not written (would not shrink), {} left alone, {} errors",
        tally.created, tally.replaced, tally.current, tally.not_smaller, tally.left, tally.errors
    );
    u8::from(tally.errors > 0)
}

/// Whether a name is a sidecar (or a temporary one): never compressed.
fn is_sidecar(name: &str) -> bool {
    Coding::ALL
        .iter()
        .any(|c| name.ends_with(&format!(".{}", c.extension())))
}

fn walk(root: &Path, rel: &Path, tally: &mut Tally) {
    let dir = root.join(rel);
    let mut entries: Vec<_> = match fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(Result::ok).collect(),
        Err(e) => {
            eprintln!("nikaia compress: {}: {e}", dir.display());
            tally.errors += 1;
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        // Dotfiles (and dot-directories) are not served; sidecars are
        // outputs. Symbolic links are not followed: a link may lead out.
        if text.starts_with('.') || is_sidecar(text) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let rel = rel.join(&name);
        if kind.is_dir() {
            walk(root, &rel, tally);
        } else if kind.is_file() {
            for coding in Coding::ALL {
                file(root, &rel, coding, tally);
            }
        }
    }
}

/// Makes or refreshes one sidecar of `rel`.
fn file(root: &Path, rel: &Path, coding: Coding, tally: &mut Tally) {
    let path = root.join(rel);
    let mut sidecar_name = rel.as_os_str().to_owned();
    sidecar_name.push(".");
    sidecar_name.push(coding.extension());
    let shown = PathBuf::from(&sidecar_name);
    let sidecar = root.join(&sidecar_name);
    let Ok(original) = fs::symlink_metadata(&path) else {
        return;
    };
    let stale = match fs::symlink_metadata(&sidecar) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!("nikaia compress: {}: {e}", shown.display());
            tally.errors += 1;
            return;
        }
        Ok(m) if !m.is_file() => {
            println!("left {}: not a regular file", shown.display());
            tally.left += 1;
            return;
        }
        Ok(m) if mtime_ns(&m) >= mtime_ns(&original) && m.len() > 0 => {
            tally.current += 1;
            return;
        }
        Ok(m) => Some(m),
    };
    match write(&path, &sidecar, coding, original.len(), stale.as_ref()) {
        Ok(Some(size)) => {
            let verb = if stale.is_some() {
                tally.replaced += 1;
                "replaced stale"
            } else {
                tally.created += 1;
                "created"
            };
            println!(
                "{verb} {} ({} -> {size} bytes)",
                shown.display(),
                original.len()
            );
        }
        Ok(None) => {
            let note = if stale.is_some() {
                " (the stale one is left; the server does not send it)"
            } else {
                ""
            };
            println!("not written {}: would not shrink{note}", shown.display());
            tally.not_smaller += 1;
        }
        Err(e) => {
            eprintln!("nikaia compress: {}: {e}", shown.display());
            tally.errors += 1;
        }
    }
}

fn mtime_ns(m: &fs::Metadata) -> i128 {
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// Compresses `path` into a temporary file beside `sidecar` and renames it
/// there; `Ok(None)` when the result would not be smaller than the file.
fn write(
    path: &Path,
    sidecar: &Path,
    coding: Coding,
    size: u64,
    stale: Option<&fs::Metadata>,
) -> io::Result<Option<u64>> {
    let dir = sidecar.parent().unwrap_or(Path::new("."));
    let base = sidecar.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{base}.nikaia-{}.tmp", std::process::id()));
    let out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let result = (|| {
        let input = fs::File::open(path)?;
        let out = encode(coding, input, out)?;
        out.sync_all()?;
        let written = out.metadata()?.len();
        if written >= size {
            return Ok(None);
        }
        match stale {
            // Missing before: whatever appeared there meanwhile is kept.
            None => rustix::fs::renameat_with(
                rustix::fs::CWD,
                &temp,
                rustix::fs::CWD,
                sidecar,
                rustix::fs::RenameFlags::NOREPLACE,
            )?,
            // Stale: replaced only if it is still that same file.
            Some(before) => {
                let now = fs::symlink_metadata(sidecar)?;
                if (now.dev(), now.ino(), mtime_ns(&now))
                    != (before.dev(), before.ino(), mtime_ns(before))
                {
                    return Err(io::Error::other("changed while it was compressed; left"));
                }
                fs::rename(&temp, sidecar)?;
            }
        }
        Ok(Some(written))
    })();
    if !matches!(result, Ok(Some(_))) {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// The whole of `input`, encoded with `coding` at its level (std's one
/// compressor, shared with the kept variants).
fn encode(coding: Coding, input: fs::File, mut out: fs::File) -> io::Result<fs::File> {
    let len = input.metadata()?.len();
    nikaia_std::encode::encode(coding, len, input, &mut out)?;
    Ok(out)
}
