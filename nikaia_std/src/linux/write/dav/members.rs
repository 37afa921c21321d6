//! The rules a collection's members meet when `COPY`, `MOVE` or `DELETE`
//! walks it: each member under its own rules (`site::dav::member_may`),
//! on each side of the walk, within a bound of entries; what a rule or
//! the file system refused is kept for the 207.

use crate::fs::dav::Members;
use crate::http::site::dav::{member_may, Member};
use crate::http::site::Grant;
use crate::rt::Runtime;

/// The most members one walk takes (the listing's cap).
pub(super) const MAX_MEMBERS: usize = 100_000;

/// The rules of one walk.
pub(super) struct Ruled<'a> {
    pub rt: &'a Runtime,
    pub grant: &'a Grant,
    /// What is done at the walked name: a copy reads it, a removal
    /// removes it.
    pub at_source: Source,
    /// For a copy or a move: where each member lands (the walked
    /// collection's name, and the Destination's), made there.
    pub to: Option<(String, String)>,
    pub refused: Vec<(String, u16)>,
    pub budget: usize,
}

/// What the walk does at its own side.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Read {
        hidden: bool,
    },
    Remove,
    /// A move's member: removed at the source, made at the Destination.
    Move,
}

impl<'a> Ruled<'a> {
    pub(super) fn new(rt: &'a Runtime, grant: &'a Grant, at_source: Source) -> Ruled<'a> {
        Ruled {
            rt,
            grant,
            at_source,
            to: None,
            refused: Vec::new(),
            budget: MAX_MEMBERS,
        }
    }

    /// The Destination's name of the member `name`.
    fn landing(&self, name: &str) -> Option<String> {
        let (from, to) = self.to.as_ref()?;
        let from = from.trim_end_matches('/');
        let rest = name.strip_prefix(from).unwrap_or(name);
        Some(format!("{}{rest}", to.trim_end_matches('/')))
    }
}

impl Members for Ruled<'_> {
    fn may(&mut self, name: &str, dir: bool) -> bool {
        let here = match self.at_source {
            Source::Read { hidden } => Member::Read { hidden },
            Source::Remove | Source::Move => Member::Remove { dir },
        };
        if !member_may(self.rt, self.grant, name, here) {
            return false;
        }
        match self.landing(name) {
            Some(there) => member_may(self.rt, self.grant, &there, Member::Create),
            None => true,
        }
    }

    fn refused(&mut self, name: &str, status: u16) {
        self.refused.push((name.to_owned(), status));
    }

    fn count(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }
}
