//! What the end of a jailed run means: its exit code (bwrap passes the jail's on) and which
//! limit, if any, ended it — named by the runner, or read from the signal, the CPU used and
//! the errors Python printed.

use super::jail::Ended;
use super::outputs::Report;
use super::{JobLimits, LimitHit};

/// The exit code: bwrap passes the jail's on, and a signal that ended the jail's first
/// process as 128 + the signal.
pub(super) fn exit_code(end: &Ended, report: &Report) -> Option<i32> {
    let status = end.status?;
    let code = status.code()?;
    match &report.end {
        Some(said) if said.exit == code => Some(code),
        None if code > 128 => None,
        _ => Some(code),
    }
}

/// Which of the memory, CPU and process limits ended the run, if one did.
pub(super) fn classify(
    end: &Ended,
    report: &Report,
    limits: &JobLimits,
    stderr: &str,
) -> Option<LimitHit> {
    if let Some(named) = report.limit_named() {
        return Some(named);
    }
    let signal = end
        .status
        .and_then(|s| s.code())
        .filter(|&c| c > 128 && report.end.is_none())
        .map(|c| c - 128);
    if signal == Some(libc::SIGXCPU) || end.cpu >= limits.cpu {
        return Some(LimitHit::Cpu);
    }
    if stderr.contains("MemoryError") || stderr.contains("Cannot allocate memory") {
        return Some(LimitHit::Memory);
    }
    if stderr.contains("BlockingIOError") || stderr.contains("Resource temporarily unavailable") {
        return Some(LimitHit::Processes);
    }
    None
}
