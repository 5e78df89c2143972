//! Numbers the turn's files share: how long a turn may still be storing itself, and the
//! output cap a budget hold leaves room for. A leaf: it imports nothing of the turn.

use std::time::Duration;

/// How long a turn may still be storing itself after its deadline (the final store's
/// minimum window and room to spare). A turn's claim on its conversation and its budget
/// holds outlive the deadline by this much, so that nobody takes them over while the turn
/// is still writing.
pub const STORE_GRACE: Duration = Duration::from_secs(120);

/// The output cap a reservation leaves room for.
pub(crate) fn clamp_output(room: i64, max_output: i64) -> u32 {
    u32::try_from(room.clamp(1, max_output.max(1))).unwrap_or(u32::MAX)
}
