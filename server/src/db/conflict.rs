//! Transaction conflicts: a deadlock (SQLSTATE 40P01) or a serialization failure (40001).
//! Postgres rolled the losing transaction back whole, so running it again is safe wherever
//! the transaction is the unit of work (nothing outside it was done on its behalf). The lock
//! order ([`crate::turn::sql`]) keeps deadlocks away on the chat path; this is the backstop:
//! a few attempts with jittered backoff, each loss counted in
//! `agentchat_db_conflicts_total{transaction}`, and when they run out the caller gets
//! [`DbError::Conflict`] (a 503 `busy` with `Retry-After`, never a 500).

use std::future::Future;
use std::time::Duration;

use prometheus::IntCounterVec;

use super::DbError;

/// Attempts in all, the first included.
pub const ATTEMPTS: u32 = 4;

/// Backoff before the second attempt; doubled for each later one, then jittered.
const FIRST_PAUSE: Duration = Duration::from_millis(15);

/// The transactions that retry conflicts: the label set of `agentchat_db_conflicts_total`
/// (fixed, so a dashboard sees every series from the start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transaction {
    /// A turn's first round trip: the claim and the budget period's lock.
    TurnStart,
    /// A step's commit: its messages, the settlement and the next reservation.
    TurnStep,
    /// A turn's final commit ([`crate::turn::store`] retries it until its deadline).
    TurnEnd,
    /// A title's settlement and the title itself.
    Title,
}

impl Transaction {
    pub const ALL: [Self; 4] = [Self::TurnStart, Self::TurnStep, Self::TurnEnd, Self::Title];

    pub fn label(self) -> &'static str {
        match self {
            Self::TurnStart => "turn_start",
            Self::TurnStep => "turn_step",
            Self::TurnEnd => "turn_end",
            Self::Title => "title",
        }
    }
}

/// Whether Postgres gave the transaction up to a concurrent one: a deadlock or a
/// serialization failure. diesel names the second; the first it reports as `Unknown` with
/// Postgres's message.
pub fn is_conflict(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match e {
        Error::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => true,
        Error::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            info.message().contains("deadlock detected")
        }
        _ => false,
    }
}

/// The retries of one transaction: ask [`Retry::again`] after each failed attempt.
pub struct Retry<'m> {
    what: Transaction,
    conflicts: &'m IntCounterVec,
    attempt: u32,
}

impl<'m> Retry<'m> {
    /// `conflicts`: the `agentchat_db_conflicts_total` counter.
    pub fn new(what: Transaction, conflicts: &'m IntCounterVec) -> Self {
        Self {
            what,
            conflicts,
            attempt: 1,
        }
    }

    /// After a failed attempt: `true` (having waited a jittered pause) when it was a conflict
    /// and attempts are left; `false` when the caller should give up and report `e`. Every
    /// conflict is counted, the last one too.
    pub async fn again(&mut self, e: &diesel::result::Error) -> bool {
        if !is_conflict(e) {
            return false;
        }
        self.conflicts.with_label_values(&[self.what.label()]).inc();
        if self.attempt >= ATTEMPTS {
            tracing::warn!(transaction = self.what.label(), attempts = self.attempt, error = %e,
                "a transaction kept losing conflicts; giving up");
            return false;
        }
        tokio::time::sleep(pause(self.attempt)).await;
        self.attempt += 1;
        true
    }
}

/// Runs the transaction `run` (which takes its own connection each time), again while it
/// loses a conflict, up to [`ATTEMPTS`]. Any other error, or the last conflict, is returned.
pub async fn retry<T, F, Fut>(
    what: Transaction,
    conflicts: &IntCounterVec,
    mut run: F,
) -> Result<T, DbError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DbError>>,
{
    let mut retry = Retry::new(what, conflicts);
    loop {
        match run().await {
            Err(DbError::Conflict(e)) => {
                if !retry.again(&e).await {
                    return Err(DbError::Conflict(e));
                }
            }
            other => return other,
        }
    }
}

/// The pause after attempt `n` (from 1): the doubling backoff, scaled by a random 50–150 %
/// so that the two sides of a deadlock do not meet again in step.
fn pause(n: u32) -> Duration {
    let base = FIRST_PAUSE * 2u32.saturating_pow(n.saturating_sub(1));
    base.mul_f64(0.5 + rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_are_jittered() {
        for n in 1..ATTEMPTS {
            let p = pause(n);
            let base = FIRST_PAUSE * 2u32.pow(n - 1);
            assert!(p >= base / 2 && p <= base * 3 / 2, "{n}: {p:?}");
        }
    }

    #[test]
    fn every_transaction_has_its_own_label() {
        let labels: std::collections::HashSet<_> =
            Transaction::ALL.iter().map(|t| t.label()).collect();
        assert_eq!(labels.len(), Transaction::ALL.len());
    }
}
