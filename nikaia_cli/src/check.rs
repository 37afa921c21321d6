//! `nikaia check FILE`: validate a runtime file and show what it means.

use std::path::Path;

use nikaia_std::rt::Runtime;

/// Valid: the effective configuration on stdout, 0. Invalid: every error on
/// stderr, one per line, 1.
pub fn run(file: &Path) -> u8 {
    match Runtime::load(file) {
        Ok(runtime) => {
            print!("{}", runtime.to_toml());
            0
        }
        Err(errors) => {
            for error in errors {
                eprintln!("{error}");
            }
            1
        }
    }
}
