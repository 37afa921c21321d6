//! Reads a file: the same program builds for wasm32.
use nikaia_std::fs::{self, Root};

pub fn logo(root: &Root) -> usize {
    fs::read("logo.png", root).unwrap().len()
}
