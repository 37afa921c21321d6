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
fn proxy_header() {
    replay("proxy_header", nikaia_std::fuzzing::proxy_header);
}
