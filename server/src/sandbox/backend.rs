//! The face of the code interpreter's jail (DESIGN §15): one [`Job`] in, one [`RunResult`]
//! out. The local backend is bubblewrap; a remote one (a sandbox service, a microVM API)
//! implements the same trait, so the tool and the turn never learn which one ran the code.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

/// How well a backend isolates, as `/readyz`, the admin view and the
/// `agentchat_sandbox_isolation{level}` gauge say it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "level", content = "reason", rename_all = "snake_case")]
pub enum Isolation {
    /// Namespaces, seccomp, rlimits and a per-run cgroup (memory, pids, CPU).
    Ok,
    /// Namespaces, seccomp and rlimits; the host delegates no cgroup.
    RlimitsOnly,
    /// No jail can be made here: the tool refuses, with this reason.
    Unavailable(String),
}

impl Isolation {
    /// The label used in metrics and in the admin view.
    pub fn level(&self) -> &'static str {
        match self {
            Isolation::Ok => "ok",
            Isolation::RlimitsOnly => "rlimits_only",
            Isolation::Unavailable(_) => "unavailable",
        }
    }
}

/// What one run may use. Built from `[sandbox]`, tightened per role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLimits {
    /// Wall time from start; the host kills the whole jail then.
    pub wall: Duration,
    /// CPU time of the whole run.
    pub cpu: Duration,
    pub memory_bytes: u64,
    pub max_processes: u32,
    /// Size of the `/tmp` tmpfs.
    pub tmp_bytes: u64,
    /// Size of the `/mnt/data` tmpfs (inputs and outputs together).
    pub data_bytes: u64,
    /// Kept per stream (stdout and stderr each): head and tail, with a marker between.
    pub max_output_bytes: usize,
    /// Files taken from `/mnt/data/outputs`: their count and each one's size.
    pub max_files: u32,
    pub max_file_bytes: u64,
}

impl JobLimits {
    /// The limits `[sandbox]` gives a run; `timeout_secs` (the tool's argument) may only
    /// shorten the wall time, never lengthen it. CPU time is bounded by the wall time.
    pub fn from_settings(s: &crate::config::SandboxSettings, timeout_secs: Option<u64>) -> Self {
        let secs = timeout_secs.unwrap_or(s.timeout_secs).clamp(
            1,
            s.timeout_secs.min(crate::config::MAX_SANDBOX_TIMEOUT_SECS),
        );
        let mb = |n: u64| n.saturating_mul(1024 * 1024);
        Self {
            wall: Duration::from_secs(secs),
            cpu: Duration::from_secs(secs),
            memory_bytes: mb(s.memory_mb),
            max_processes: s.max_processes,
            tmp_bytes: mb(s.tmp_mb),
            data_bytes: mb(s.data_mb),
            max_output_bytes: s.max_output_bytes,
            max_files: s.max_files,
            max_file_bytes: s.max_file_bytes,
        }
    }
}

/// A file copied into the jail, read-only, at `/mnt/data/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The path under `/mnt/data` (relative, no `..`: the caller checked it).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// One run of Python code.
#[derive(Debug, Clone)]
pub struct Job {
    pub code: String,
    pub inputs: Vec<InputFile>,
    pub limits: JobLimits,
}

/// Which limit ended the run, if one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    Memory,
    Cpu,
    Processes,
    Output,
    Files,
}

/// A regular file the code left under `/mnt/data/outputs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// Relative to `/mnt/data/outputs`.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// What came of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The process's exit code; `None` when a signal ended it.
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub limit_hit: Option<LimitHit>,
    /// Head and tail, with a marker where the middle was dropped.
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    pub cpu: Duration,
    pub max_rss_bytes: u64,
    pub outputs: Vec<OutputFile>,
    /// Output entries not taken (symlinks, devices, over the count or size cap), with why.
    pub skipped: Vec<String>,
}

/// Why a run did not happen at all (not a failure of the code: that is a [`RunResult`]).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox is unavailable: {0}")]
    Unavailable(String),
    #[error("the sandbox could not start the run: {0}")]
    Start(String),
}

/// A place that runs code in a jail.
#[async_trait]
pub trait Backend: Send + Sync {
    /// How well runs are isolated here (probed once at start).
    fn isolation(&self) -> Isolation;

    /// Runs `job` to its end. Dropping the future kills the jail.
    async fn run(&self, job: Job) -> Result<RunResult, SandboxError>;
}

/// Where the jail finds its interpreter (for docs and the probe).
pub fn default_python() -> PathBuf {
    PathBuf::from("/usr/bin/python3")
}
