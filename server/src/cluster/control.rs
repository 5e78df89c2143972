//! Stopping a running turn from outside: cancel, the deadline, shutdown, revoked access.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Why a turn was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `POST .../cancel`.
    Cancelled,
    /// The turn ran past its deadline.
    Deadline,
    /// The server is shutting down.
    Shutdown,
    /// The user was disabled or their role changed.
    Revoked,
}

impl StopReason {
    pub(crate) fn status_reason(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::Deadline => "turn_timeout",
            Self::Shutdown => "shutdown",
            Self::Revoked => "access_revoked",
        }
    }
}

/// Stops a running turn and remembers why (the first reason wins).
#[derive(Clone, Default)]
pub struct TurnControl {
    pub(crate) token: CancellationToken,
    reason: Arc<OnceLock<StopReason>>,
}

impl TurnControl {
    pub fn stop(&self, reason: StopReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub(crate) fn stopped(&self) -> Option<StopReason> {
        self.token
            .is_cancelled()
            .then(|| self.reason.get().copied().unwrap_or(StopReason::Cancelled))
    }
}
