//! The reservation of a turn's start, in two halves around the history that sizes the call.
//! The first round trip locks the user's period row and reads what is left
//! ([`lock_period`]); the second, with the start's COMMIT, reserves the amount fitted to the
//! call and records its hold ([`hold`]). The row stays locked from the first to the COMMIT,
//! so what was read is still what is left: each period row and each hold is written once
//! per start, never reserved large and cut afterwards.
//!
//! Correctness does not depend on when the row is read. The exact reservation grants
//! `min(want, left)` when `left >= need`; with `left` read under the lock, the start holds
//! exactly that. When too little is left, or there is no period row yet, the start reserves
//! exactly in a round trip of its own, as it always did (nothing is held to give back).

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use super::budget::{period_name, Hold, OptionalRow, ReserveAsk};
use crate::budget::Period;
use crate::db::prepared::{joined, sql, Joined};

/// The user's token period row, locked by [`lock_period`] until the transaction ends.
#[derive(Debug, Clone, Copy)]
pub struct Locked {
    /// What the period had left when locked, and so until the COMMIT.
    pub left: i64,
    pub period: Period,
    pub period_start: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    left: i64,
    #[diesel(sql_type = Text)]
    period: String,
    #[diesel(sql_type = Timestamptz)]
    period_start: DateTime<Utc>,
}

/// Reads the user's limit and locks the current period's row, in one statement that does
/// not borrow the connection (pipelined with the start's reads). `None` for an unlimited
/// budget or a missing period row. The lock is the one an update of the row takes (`FOR NO
/// KEY UPDATE`): other reservations of this user wait for the start's COMMIT, as they would
/// behind its update.
pub fn lock_period(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> BoxFuture<'static, diesel::QueryResult<Option<Locked>>> {
    // The period names the budget module stores; a role's unknown name matches none of them
    // (the exact path then counts it per month).
    // Raw SQL: a CTE with COALESCE across joins, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("WITH lim AS ( \
             SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period AS period \
             FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $1) \
         SELECT lim.tokens - b.spent - b.reserved AS left, b.period, b.period_start \
         FROM budget_periods b JOIN lim ON b.period = lim.period \
         WHERE b.user_id = $1 AND lim.tokens IS NOT NULL \
           AND b.period_start = CASE lim.period WHEN 'day' THEN $2 WHEN 'week' THEN $3 \
                                WHEN 'month' THEN $4 WHEN 'total' THEN $5 END \
         FOR NO KEY UPDATE OF b")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Timestamptz, _>(Period::Day.start(now))
    .bind::<Timestamptz, _>(Period::Week.start(now))
    .bind::<Timestamptz, _>(Period::Month.start(now))
    .bind::<Timestamptz, _>(Period::Total.start(now))
    .get_result::<Row>(conn)
    .map(|r| {
        r.optional_row().map(|row| {
            row.and_then(|row| {
                Period::parse(&row.period).map(|period| Locked {
                    left: row.left,
                    period,
                    period_start: row.period_start,
                })
            })
        })
    })
    .boxed()
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
