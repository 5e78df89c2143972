//! Running untrusted work in a limited child process (DESIGN §15). A crash, a runaway loop
//! or a memory blow-up there ends that child, never the server: `limits` holds the process
//! limits the child puts on itself as its first act (no `unsafe` here, so no `pre_exec`),
//! `run` starts the child with an empty environment, feeds it, bounds what it says, kills
//! it at the wall deadline or when the caller gives up, and says how it ended. Document
//! extraction is the first user. The code interpreter's jail is `backend` (the trait every
//! backend implements) and `bubblewrap` (the local one), with `seccomp` its filters, `jail`
//! the host process, `capture` and `outputs` what comes back, `run_end` what its end means.

pub mod backend;
pub mod bubblewrap;
mod capture;
mod fonts;
mod jail;
pub mod limits;
pub mod metrics;
mod outputs;
pub mod run;
mod run_end;
mod seccomp;
#[cfg(test)]
mod tests;

pub use backend::{
    Backend, InputFile, Isolation, Job, JobLimits, LimitHit, OutputFile, RunResult, SandboxError,
};
pub use bubblewrap::{BubblewrapBackend, Programs};
pub use limits::{ChildLimits, ProcessLimits};
pub use run::{run, Ending, Spawn};
