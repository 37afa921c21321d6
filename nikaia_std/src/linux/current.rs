//! The runtime new requests use: read whole at a reload and swapped in
//! one step, with a generation each worker compares once per loop turn.
//! Shared by the server and the parts that read the runtime as it is now
//! (the write wing) without the rest of the server's state.

use crate::rt::Runtime;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

pub(crate) struct Current {
    config: RwLock<Arc<Runtime>>,
    generation: AtomicU64,
}

impl Current {
    pub(crate) fn new(rt: Runtime) -> Current {
        Current {
            config: RwLock::new(Arc::new(rt)),
            generation: AtomicU64::new(0),
        }
    }

    /// The runtime new requests use now.
    pub(crate) fn runtime(&self) -> Arc<Runtime> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Which runtime is current: changes with every reload.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Makes `rt` the runtime of new requests (a reload).
    pub(crate) fn set(&self, rt: Runtime) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(rt);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}
