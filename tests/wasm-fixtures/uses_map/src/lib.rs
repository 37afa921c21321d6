//! Maps a file: refused when built for wasm32, with the reason.
use nikaia_std::fs::{self, Root};

pub fn logo(root: &Root) -> usize {
    let mapped: fs::Mapped = fs::map("logo.png", root).unwrap();
    mapped.len()
}
