//! Replays, on stable, every input the fuzz targets kept (`fuzz/corpus/`)
//! and every crash they found (`fuzz/regressions/`), through the same entry
//! points (`fuzzing`, `fs::fuzzing`). CI replays; it does not fuzz.
#![cfg(target_os = "linux")]

fn replay(target: &str, run: fn(&[u8])) {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    nikaia_std::fuzzing::replay(&fuzz, target, run);
}

#[test]
fn request_head() {
    replay("request_head", nikaia_std::fuzzing::request_head);
}

#[test]
fn chunked() {
    replay("chunked", nikaia_std::fuzzing::chunked);
}

#[test]
fn ranges_and_conditionals() {
    replay(
        "ranges_and_conditionals",
        nikaia_std::fuzzing::ranges_and_conditionals,
    );
}

#[test]
fn decode_and_route() {
    replay("decode_and_route", nikaia_std::fuzzing::decode_and_route);
}

#[test]
fn runtime_file() {
    replay("runtime_file", nikaia_std::fuzzing::runtime_file);
}

#[test]
fn resolve() {
    replay("resolve", nikaia_std::fs::fuzzing::resolve);
}

#[test]
fn connection() {
    replay("connection", nikaia_std::fuzzing::connection);
}

#[test]
fn tls_connection() {
    replay("tls_connection", nikaia_std::fuzzing::tls_connection);
}

#[test]
fn hpack() {
    replay("hpack", nikaia_std::fuzzing::hpack);
}

#[test]
fn h2_frames() {
    replay("h2_frames", nikaia_std::fuzzing::h2_frames);
}

#[test]
fn h2_connection() {
    replay("h2_connection", nikaia_std::fuzzing::h2_connection);
}

#[test]
fn qpack() {
    replay("qpack", nikaia_std::fuzzing::qpack);
}

#[test]
fn h3_frames() {
    replay("h3_frames", nikaia_std::fuzzing::h3_frames);
}

#[test]
fn proxy_header() {
    replay("proxy_header", nikaia_std::fuzzing::proxy_header);
}

/// Every request head the fuzz target kept and every crash it found,
/// read by our parser and by an independent one (PyPI h11, through
/// `tests/heads_h11.py`): a head we accept, h11 accepts with the same
/// method, target, version, fields and body framing. Where we are
/// stricter, h11 may accept what we refuse; the other way round is a
/// smuggling channel.
#[test]
fn request_heads_agree_with_h11() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut lines = String::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join("request_head")) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).unwrap();
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            let seen = nikaia_std::fuzzing::request_head_seen(&data);
            lines.push_str(&format!("{}\t{hex}\t{seen}\n", path.display()));
        }
    }
    let list = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(list.path(), lines).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/heads_h11.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(list.path())
        .output()
        .expect("python3 runs (test.sh installs PyPI h11)");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
}
