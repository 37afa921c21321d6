//! The library half of the `nikaia` command: the Nikaia front end, shared
//! by the command (`--trust`, `stubtest`) and by the fuzz target of its
//! lexer and parser (`nikaia_cli/fuzz/`).

pub mod nk;

#[doc(hidden)]
pub mod fuzzing;
