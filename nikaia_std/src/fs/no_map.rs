//! `fs::map` where there is no memory mapping (wasm32): using `fs::map` or
//! `fs::Mapped` is a compile-time error whose message says why and what to
//! use instead; `fs::read` compiles.

use super::{Error, Root};
use std::path::Path;

mod sealed {
    /// Implemented by no type: [`super::MapOnWasm32`] can never hold.
    pub trait Sealed {}
}

/// Never implemented: the bound that makes `fs::map` and `fs::Mapped` a
/// compile-time error on wasm32, with the reason as the message.
#[diagnostic::on_unimplemented(
    message = "fs::map is not available on wasm32: there is no memory mapping there; use fs::read",
    label = "fs::map and fs::Mapped do not exist on wasm32",
    note = "fs::read(name, &root) reads the whole file through the host adapter"
)]
pub trait MapOnWasm32: sealed::Sealed {
    /// What `fs::map` would give.
    type Mapped;
    /// Never called: there is no implementation.
    fn unavailable(self, root: &Root) -> Result<Self::Mapped, Error>;
}

/// The type `fs::Mapped` would name; it has no values.
pub enum NoMapping {}

/// Not available on wasm32: naming it is the compile-time error of
/// [`MapOnWasm32`]. Use [`fs::read`](super::read).
pub type Mapped = <NoMapping as MapOnWasm32>::Mapped;

/// Not available on wasm32: calling it is the compile-time error of
/// [`MapOnWasm32`]. Use [`fs::read`](super::read).
pub fn map<N: AsRef<Path> + MapOnWasm32>(name: N, root: &Root) -> Result<N::Mapped, Error> {
    name.unavailable(root)
}
