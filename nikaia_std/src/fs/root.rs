// STUB: replaced by the fs work (issue 2).
use super::{Error, Opened};
use std::io;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct Root;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnywhereSite {
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
}

pub fn anywhere_sites() -> Vec<(AnywhereSite, u64)> {
    Vec::new()
}

pub fn force_fallback_walk(_on: bool) {}

impl Root {
    pub fn dir(_path: impl AsRef<Path>) -> io::Result<Root> {
        Err(io::Error::other("stub"))
    }
    #[track_caller]
    pub fn anywhere() -> Root {
        Root
    }
    pub fn open(&self, _name: impl AsRef<Path>) -> Result<Opened, Error> {
        Err(Error::NotFound)
    }
}
