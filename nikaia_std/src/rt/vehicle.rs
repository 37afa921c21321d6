//! The ways a body can travel (D3), named for every target: the backend
//! chooses one per response (`http::port::Reads::vehicle`), and they are the
//! rows of `nikaia explain`. How each one moves bytes is the backend's
//! (`linux/send.rs`); on wasm32 a file body is always read.

/// The ways a body reaches the socket; also the rows of `nikaia explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vehicle {
    /// `sendfile(2)` from the descriptor opened for this request.
    Sendfile,
    /// A kept mapping (D8) written with the head in one `sendmsg`.
    Kept,
    /// `pread` into a pooled buffer, then written.
    Read,
    /// A body the handler had in memory (`Bytes`, `String`, a `Mapped`).
    Memory,
}

impl Vehicle {
    pub(crate) const ALL: [Vehicle; 4] = [
        Vehicle::Sendfile,
        Vehicle::Kept,
        Vehicle::Read,
        Vehicle::Memory,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Vehicle::Sendfile => "sendfile",
            Vehicle::Kept => "kept mapping",
            Vehicle::Read => "read",
            Vehicle::Memory => "in-memory",
        }
    }
}
