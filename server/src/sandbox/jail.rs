//! One jail as a host process: bwrap started with an empty environment and the descriptors it
//! reads (filters, files), waited for on a blocking thread with `wait4` (CPU time and peak
//! memory of everything it reaped), killed at the wall limit or when the run is dropped.
//!
//! Killing bwrap ends the jail: the code runs as the jail's PID 1 with `--die-with-parent`,
//! and when a PID namespace's first process dies the kernel kills every process left in it.
//! The pid is never signalled after it was reaped (it could belong to someone else by then):
//! the waiter first waits without reaping, marks the jail gone under the lock the killer
//! takes, and only then reaps.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use tokio::net::unix::pipe::Receiver;

/// How the jail process ended, with what it used.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    pub status: Option<ExitStatus>,
    pub cpu: Duration,
    pub max_rss_bytes: u64,
}

/// A started jail: its output pipes and its end.
pub struct Started {
    pub stdout: Receiver,
    pub stderr: Receiver,
    pub report: Receiver,
    pub killer: Killer,
    pub ended: tokio::sync::oneshot::Receiver<Ended>,
}

/// Kills the jail (once, and never after it was reaped); also when dropped.
pub struct Killer {
    state: Arc<Mutex<bool>>,
    pid: Pid,
}

impl Killer {
    pub fn kill(&self) {
        let Ok(reaped) = self.state.lock() else {
            return;
        };
        if !*reaped {
            // ESRCH (already exited, not yet reaped) is fine.
            let _ = kill(self.pid, Signal::SIGKILL);
        }
    }
}

impl Drop for Killer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The descriptors bwrap gets, at the numbers its arguments name.
pub struct Fds(pub Vec<FdMapping>);

/// Starts `program args` with an empty environment, as `uid` when given, with `fds` mapped
/// and the write end of the report pipe at fd 3.
pub fn start(
    program: &Path,
    args: &[String],
    uid: Option<u32>,
    fds: Fds,
) -> std::io::Result<Started> {
    let (report_reader, report_writer) = std::io::pipe()?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = uid {
        std::os::unix::process::CommandExt::uid(&mut cmd, uid);
        std::os::unix::process::CommandExt::gid(&mut cmd, uid);
    }
    let mut mappings = fds.0;
    mappings.push(FdMapping {
        parent_fd: report_writer.into(),
        child_fd: 3,
    });
    cmd.fd_mappings(mappings)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut child = cmd.spawn()?;
    // The command holds the parent's copies of the descriptors: the report's write end must
    // close here, or its reader never sees the end.
    drop(cmd);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other(
            "the jail's pipes could not be opened",
        ));
    };
    let stdout = Receiver::from_owned_fd(OwnedFd::from(stdout))?;
    let stderr = Receiver::from_owned_fd(OwnedFd::from(stderr))?;
    let pid_raw = i32::try_from(child.id()).map_err(std::io::Error::other)?;
    let pid = Pid::from_raw(pid_raw);
    let state = Arc::new(Mutex::new(false));
    let (tx, ended) = tokio::sync::oneshot::channel();
    let waiter_state = state.clone();
    std::thread::Builder::new()
        .name("sandbox-wait".into())
        .spawn(move || {
            let _ = tx.send(wait(pid, child.id(), &waiter_state));
            drop(child);
        })?;
    Ok(Started {
        stdout,
        stderr,
        report: Receiver::from_owned_fd(OwnedFd::from(report_reader))?,
        killer: Killer { state, pid },
        ended,
    })
}

/// Waits for the jail without reaping, marks it gone, then reaps it for its rusage.
fn wait(pid: Pid, raw: u32, state: &Mutex<bool>) -> Ended {
    while let Err(nix::errno::Errno::EINTR) =
        waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
    {}
    let mut reaped = match state.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    *reaped = true;
    match wait4::try_wait4_pid(raw) {
        Ok(Some(used)) => Ended {
            status: Some(used.status),
            cpu: used.rusage.utime + used.rusage.stime,
            max_rss_bytes: used.rusage.maxrss,
        },
        _ => Ended {
            status: None,
            cpu: Duration::ZERO,
            max_rss_bytes: 0,
        },
    }
}
