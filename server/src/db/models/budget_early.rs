//! The reservation of a turn's start, in two halves around the history that sizes the call.
//! The first round trip locks the user's period row and reads what is left (in the start's
//! inputs statement: [`locked`]); the second, with the start's COMMIT, reserves the amount
//! fitted to the call and records its hold ([`hold`]). The row stays locked from the first
//! to the COMMIT, so what was read is still what is left: each period row and each hold is
//! written once per start, never reserved large and cut afterwards.
//!
//! Correctness does not depend on when the row is read. The exact reservation grants
//! `min(want, left)` when `left >= need`; with `left` read under the lock, the start holds
//! exactly that. When too little is left, or there is no period row yet, the start reserves
//! exactly in a round trip of its own, as it always did (nothing is held to give back).

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use uuid::Uuid;

use super::budget::{period_name, Hold, ReserveAsk};
use crate::budget::Period;
use crate::db::prepared::{joined, sql, Joined};

/// The user's token period row, locked by the start's first round trip ([`locked`]) until
/// the transaction ends.
#[derive(Debug, Clone, Copy)]
pub struct Locked {
    /// What the period had left when locked, and so until the COMMIT.
    pub left: i64,
    pub period: Period,
    pub period_start: DateTime<Utc>,
}

/// The period row the start's first round trip locked, from its columns (all NULL: none was
/// locked, for an unlimited budget or a period without its row yet). The lock is taken in
/// the start's inputs statement ([`crate::turn::sql::inputs`]), sent after the claim: the
/// user's limit comes from the account and role it reads anyway, and the lock is the one an
/// update of the row takes (`FOR NO KEY UPDATE`), so other reservations of this user wait
/// for the start's COMMIT, as they would behind its update. A role's unknown period name
/// matches no row (the exact path then counts it per month).
pub fn locked(
    left: Option<i64>,
    period: Option<String>,
    period_start: Option<DateTime<Utc>>,
) -> Option<Locked> {
    Some(Locked {
        left: left?,
        period: Period::parse(&period?)?,
        period_start: period_start?,
    })
}

/// The statement that reserves `amount` on the `locked` row and records the hold, to which
/// the start adds its user message ([`Joined::with`]), and the hold it records. `amount`
/// must be at most `locked.left`: the caller grants what the exact reservation would.
pub fn hold(locked: Locked, ask: &ReserveAsk, amount: i64) -> (Joined, Hold) {
    let id = Uuid::new_v4();
    let expires = ask.hold_expires();
    // Raw SQL: the period's update and the hold's insert as parts of one statement.
    let period = sql(
        "UPDATE budget_periods SET reserved = reserved + $1, updated_at = now() \
         WHERE user_id = $2 AND period = $3 AND period_start = $4 RETURNING period, period_start",
    )
    .bind::<BigInt, _>(amount)
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(locked.period))
    .bind::<Timestamptz, _>(locked.period_start)
    .part();
    // Inserted from the updated row: no hold without its reservation.
    let insert = sql(
        "INSERT INTO budget_holds (id, user_id, period, period_start, amount, \
                                   expires_at, process_id, turn_id, conversation_id) \
         SELECT $1, $2, p.period, p.period_start, $3, $4, $5, $6, $7 FROM p",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<BigInt, _>(amount)
    .bind::<Timestamptz, _>(expires)
    .bind::<SqlUuid, _>(ask.process_id)
    .bind::<Nullable<SqlUuid>, _>(ask.turn_id())
    .bind::<Nullable<SqlUuid>, _>(ask.conversation_id())
    .part();
    let hold = Hold {
        id,
        user_id: ask.user_id,
        period: locked.period,
        period_start: locked.period_start,
        amount,
        money: None,
    };
    (joined(insert).with("p", period), hold)
}
