//! The rules a collection's members meet when `COPY`, `MOVE` or `DELETE`
//! walks it: each member under its own rules (`site::dav::member_may`),
//! on each side of the walk, within a bound of entries; what a rule or
//! the file system refused is kept for the 207.

use crate::fs::dav::Members;
use crate::http::site::dav::{member_may, Member};
use crate::http::site::Grant;
use crate::linux::write::locks::{table::Reach, Gate};
use crate::rt::Runtime;

/// The most members one walk takes (the listing's cap).
pub(super) const MAX_MEMBERS: usize = 100_000;
/// The deepest a walk goes below the collection it acts on: each level
/// holds a descriptor and a frame on a writer thread's stack.
pub(super) const MAX_DEPTH: usize = 64;

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
    /// Levels below the walked collection now.
    depth: usize,
    /// `write-free-floor`.
    pub floor: u64,
    /// The runtime file's own files (device, inode).
    pub protected: Vec<(u64, u64)>,
    /// Dot-names are shown (`--hidden`).
    pub hidden: bool,
    /// The request's locks and `If:`, for a removal: a member locked while
    /// the walk goes (after the collection's own check) stays, 423.
    pub locks: Option<Gate>,
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
    pub(super) fn new(
        rt: &'a Runtime,
        grant: &'a Grant,
        at_source: Source,
        protected: &[(u64, u64)],
        hidden: bool,
    ) -> Ruled<'a> {
        Ruled {
            protected: protected.to_vec(),
            hidden,
            rt,
            grant,
            at_source,
            to: None,
            refused: Vec::new(),
            budget: MAX_MEMBERS,
            depth: 0,
            floor: rt.write_free_floor,
            locks: None,
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
        if let (Member::Remove { .. }, Some(gate)) = (here, &self.locks) {
            if gate
                .decide_at(name.as_bytes(), Reach::Own, Some(None))
                .is_err()
            {
                let shown = match dir {
                    true => format!("{}/", name.trim_end_matches('/')),
                    false => name.to_owned(),
                };
                Members::refused(self, &shown, 423);
                return false;
            }
        }
        match self.landing(name) {
            Some(there) => member_may(self.rt, self.grant, &there, Member::Create),
            None => true,
        }
    }

    /// A member a listing would not show this user (a dot-name, a name
    /// denied or under another auth rule) is not named: its nearest
    /// parent that would be shown is, once.
    fn refused(&mut self, name: &str, status: u16) {
        let hidden = self.hidden;
        let shown = |n: &str| member_may(self.rt, self.grant, n, Member::Read { hidden });
        let mut said = name.trim_end_matches('/');
        while !shown(said) {
            match said.rsplit_once('/') {
                Some((parent, _)) => said = parent,
                None => {
                    said = "";
                    break;
                }
            }
        }
        if said.is_empty() && !shown(name) {
            // Nothing above it under the walk is shown either: the walked
            // collection answers for it.
            said = self.to.as_ref().map_or("", |(from, _)| from.as_str());
        }
        // The member itself keeps its trailing `/`; a parent named in its
        // place is a collection.
        let said = match said == name.trim_end_matches('/') {
            true => name.to_owned(),
            false => format!("{}/", said.trim_end_matches('/')),
        };
        if self.refused.iter().any(|(n, _)| *n == said) {
            return;
        }
        self.refused.push((said, status));
    }

    fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn floor(&self) -> u64 {
        self.floor
    }

    fn own(&self, id: (u64, u64)) -> bool {
        self.protected.contains(&id)
    }

    fn count(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }
}
