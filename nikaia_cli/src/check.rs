//! `nikaia check FILE`: validate a runtime file and show what it means.

use std::path::Path;

use nikaia_std::rt::Runtime;

/// Valid: the effective configuration on stdout, 0. Invalid, or naming
/// something on this machine a server could not start with (a stats-socket
/// path that is not a socket): every error on stderr, one per line, 1.
/// Warnings go to stderr too and leave the status 0.
pub fn run(file: &Path) -> u8 {
    match Runtime::load(file) {
        Ok(runtime) => {
            print!("{}", runtime.to_toml());
            let mut status = 0;
            for finding in runtime.preflight() {
                let level = if finding.warning { "warning" } else { "error" };
                eprintln!(
                    "{}: {level}: key `{}`: {}",
                    file.display(),
                    finding.key,
                    finding.message
                );
                if !finding.warning {
                    status = 1;
                }
            }
            status
        }
        Err(errors) => {
            for error in errors {
                eprintln!("{error}");
            }
            1
        }
    }
}
