//! Starting a limited child and telling how it ended.

use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::ProcessLimits;

/// Standard error kept, for telling an allocation failure or a stack overflow apart.
const STDERR_KEPT: usize = 16 * 1024;
const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;

/// One child to start: the program, its arguments and what it reads on standard input.
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub args: Vec<String>,
    pub stdin: Vec<u8>,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself; `stdout` is what it wrote (exit code 0 or not).
    Exited { code: i32, stdout: Vec<u8> },
    /// It wrote more than `max_output_bytes`.
    OutputTooLarge,
    /// Still running at the wall deadline: killed.
    WallTimeout,
    /// Out of CPU time (SIGXCPU, or SIGKILL at the hard limit).
    CpuLimit,
    /// An allocation failed under the memory limit.
    Memory,
    /// Its work thread overflowed the stack.
    StackOverflow,
    /// Ended by another signal.
    Crashed { signal: i32 },
    /// The caller gave up (the work is not wanted any more): killed.
    Cancelled,
    /// It could not be started.
    Unavailable(String),
}

/// Runs `spawn` under `limits` with an empty environment; the child is killed at the wall
/// deadline, when `cancel` completes, or when this future is dropped.
pub async fn run(
    spawn: Spawn<'_>,
    limits: &ProcessLimits,
    cancel: impl Future<Output = ()>,
) -> Ending {
    let started = Command::new(spawn.program)
        .args(&spawn.args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match started {
        Ok(child) => child,
        Err(e) => return Ending::Unavailable(format!("{}: {e}", spawn.program.display())),
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Ending::Unavailable("the child's pipes could not be opened".into());
    };
    let input = spawn.stdin;
    let feed = async move {
        // A child that stops reading early (it refused the input) is not an error here.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    };
    let talk = async {
        let ((), out, err) = tokio::join!(
            feed,
            read_bounded(stdout, limits.max_output_bytes),
            read_bounded(stderr, STDERR_KEPT)
        );
        (out, err)
    };
    let outcome = tokio::select! {
        talked = talk => Some(talked),
        () = tokio::time::sleep(limits.wall) => None,
        () = cancel => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Ending::Cancelled;
        }
    };
    let Some(((stdout, overflowed), (stderr, _))) = outcome else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Ending::WallTimeout;
    };
    // Both pipes are closed: the child has exited or is about to.
    let status = match tokio::time::timeout(limits.wall, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Ending::Unavailable(format!("waiting for the child: {e}")),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Ending::WallTimeout;
        }
    };
    if let Some(signal) = status.signal() {
        return by_signal(signal, &String::from_utf8_lossy(&stderr));
    }
    if overflowed {
        return Ending::OutputTooLarge;
    }
    Ending::Exited {
        code: status.code().unwrap_or(-1),
        stdout,
    }
}

/// What a signal means, with what the child said before it went.
fn by_signal(signal: i32, stderr: &str) -> Ending {
    if signal == SIGXCPU || signal == SIGKILL {
        Ending::CpuLimit
    } else if stderr.contains("memory allocation of") {
        Ending::Memory
    } else if stderr.contains("has overflowed its stack") {
        Ending::StackOverflow
    } else {
        Ending::Crashed { signal }
    }
}

/// Everything `from` says, keeping the first `keep` bytes; `true` when there was more.
async fn read_bounded(mut from: impl AsyncRead + Unpin, keep: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut more = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, more),
            Ok(n) => {
                let room = keep.saturating_sub(kept.len());
                let read = buf.get(..n).unwrap_or_default();
                kept.extend_from_slice(read.get(..room.min(n)).unwrap_or_default());
                more |= n > room;
            }
        }
    }
}
