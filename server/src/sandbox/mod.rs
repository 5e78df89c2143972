//! Running untrusted work in a limited child process (DESIGN §15). A crash, a runaway loop
//! or a memory blow-up there ends that child, never the server: `limits` holds the process
//! limits the child puts on itself as its first act (no `unsafe` here, so no `pre_exec`),
//! `run` starts the child with an empty environment, feeds it, bounds what it says, kills
//! it at the wall deadline or when the caller gives up, and says how it ended. Document
//! extraction is the first user; the code interpreter's jail will wrap the same machinery.

pub mod limits;
pub mod run;
#[cfg(test)]
mod tests;

pub use limits::{ChildLimits, ProcessLimits};
pub use run::{run, Ending, Spawn};
