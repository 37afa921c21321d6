//! The one way this crate takes a lock: a mutex a panicking thread left
//! poisoned is taken all the same. Every value it guards is left whole
//! between statements (a panic mid-update is a bug caught by the tests,
//! not a state to refuse), and a server that stops answering because one
//! handler panicked once is worse than one that goes on.

use std::sync::{Mutex, MutexGuard};

/// `m`, locked, poisoned or not.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
