//! The limits of one child process. The parent enforces the wall time (it kills the child)
//! and the output size (it stops keeping what the child writes); the child enforces the
//! rest on itself with rlimits before it touches any input (`ChildLimits::apply`).

use std::os::unix::process::CommandExt;
use std::time::Duration;

use nix::sys::resource::{setrlimit, Resource};

/// What one child may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Private writable memory (RLIMIT_DATA: heap, thread stacks): an allocation past it
    /// fails, and Rust aborts the child.
    pub memory_bytes: u64,
    /// CPU seconds (RLIMIT_CPU): SIGXCPU at this, SIGKILL a second later.
    pub cpu_secs: u64,
    /// Wall time, from start to exit; the parent kills the child then.
    pub wall: Duration,
    /// Stack of the thread the child does its work on; an overflow is a clean abort.
    pub stack_bytes: usize,
    /// Standard output kept; the rest is read and dropped.
    pub max_output_bytes: usize,
}

/// The limits a child applies to itself, as its command-line flags.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ChildLimits {
    #[arg(long)]
    pub memory_bytes: u64,
    #[arg(long)]
    pub cpu_secs: u64,
    #[arg(long)]
    pub stack_bytes: usize,
    /// Set by `enter` on the image it starts: the limits are in force already.
    #[arg(long, hide = true)]
    pub limited: bool,
}

impl ProcessLimits {
    /// The flags `ChildLimits` reads back in the child.
    pub fn child_args(&self) -> Vec<String> {
        vec![
            "--memory-bytes".into(),
            self.memory_bytes.to_string(),
            "--cpu-secs".into(),
            self.cpu_secs.to_string(),
            "--stack-bytes".into(),
            self.stack_bytes.to_string(),
        ]
    }
}

impl ChildLimits {
    /// Puts the limits on this process and starts this program again in it, with
    /// `--limited`: the allocator reserves its arenas at the first allocation, before
    /// `main` could limit anything, and an arena reserved unlimited would be memory the
    /// limit never sees. The new image reserves under the limit (and settles for less).
    /// Returns at once in that new image; an `Err` when the limits or the restart failed.
    pub fn enter(&self) -> Result<(), String> {
        if self.limited {
            return Ok(());
        }
        self.apply()?;
        let program = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
        let failed = std::process::Command::new(program)
            .args(std::env::args_os().skip(1))
            .arg("--limited")
            .exec();
        Err(format!("restarting under the limits: {failed}"))
    }

    /// Puts the limits on this process: memory, CPU time, no core files, no files written
    /// (standard output must be a pipe), few descriptors. Called by the child first thing.
    pub fn apply(&self) -> Result<(), String> {
        let set = |what: Resource, soft: u64, hard: u64| {
            setrlimit(what, soft, hard).map_err(|e| format!("setrlimit {what:?}: {e}"))
        };
        set(Resource::RLIMIT_DATA, self.memory_bytes, self.memory_bytes)?;
        let cpu = self.cpu_secs.max(1);
        set(Resource::RLIMIT_CPU, cpu, cpu.saturating_add(1))?;
        set(Resource::RLIMIT_CORE, 0, 0)?;
        set(Resource::RLIMIT_FSIZE, 0, 0)?;
        set(Resource::RLIMIT_NOFILE, 16, 16)?;
        Ok(())
    }

    /// Runs `work` on a thread with the bounded stack and waits for it; `Err` when the
    /// thread could not start or panicked (a stack overflow is not a panic: it aborts this
    /// child, as it should).
    pub fn on_bounded_stack<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let thread = std::thread::Builder::new()
            .name("sandboxed".into())
            .stack_size(self.stack_bytes)
            .spawn(work)
            .map_err(|e| format!("starting the work thread: {e}"))?;
        thread.join().map_err(|_| "the work panicked".to_owned())
    }
}
