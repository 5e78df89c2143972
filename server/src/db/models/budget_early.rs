//! A reservation sent in the first round trip of a turn's start, before the history that
//! sizes the call has been read: it asks for as much as the call could possibly want and
//! is cut to the real size in the start's COMMIT. Nobody else ever sees the larger hold:
//! the period row stays locked from the reservation to the COMMIT.
//!
//! Correctness does not depend on the guess. The exact reservation grants
//! `min(want, left)` when `left >= need`; this one grants `g = min(big, left)` when
//! `left >= small`. When `g` covers the exact `need`, `min(g, want)` is what the exact
//! reservation would have granted, so the hold is cut to that. When it does not (little is
//! left, or no period row yet), the start releases it and reserves exactly in a second
//! round trip, as it always did.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use super::budget::{Hold, Limit, OptionalRow};
use crate::budget::Period;
use crate::db::prepared::{joined, sql, Joined};

/// What the early reservation asks: bounds only, the limit is read by the statement.
#[derive(Debug, Clone, Copy)]
pub struct EarlyAsk {
    pub user_id: Uuid,
    /// At least what the call can want.
    pub big: i64,
    /// At most what the call can need.
    pub small: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: std::time::Duration,
    pub process_id: Uuid,
    /// The turn the hold is for ([`super::budget::ReserveAsk::turn_id`]).
    pub turn_id: Uuid,
}

/// A hold taken by [`reserve_early`], not yet fitted to the call.
#[derive(Debug, Clone, Copy)]
pub struct EarlyHold {
    pub id: Uuid,
    pub amount: i64,
}

#[derive(QueryableByName)]
struct Granted {
    #[diesel(sql_type = BigInt)]
    amount: i64,
}

/// Reads the user's limit and reserves `min(big, left)` if at least `small` is left, in one
/// statement that does not borrow the connection (pipelined with the start's reads). `None`
/// for an unlimited budget, a missing period row or too little left.
pub fn reserve_early(
    conn: &mut AsyncPgConnection,
    ask: &EarlyAsk,
) -> BoxFuture<'static, diesel::QueryResult<Option<EarlyHold>>> {
    let id = Uuid::new_v4();
    let expires =
        ask.now + chrono::Duration::from_std(ask.hold_ttl).unwrap_or(chrono::Duration::hours(1));
    // The period names the budget module stores; a role's unknown name matches none of them
    // (the exact path then counts it per month).
    // Raw SQL: a CTE with COALESCE across joins, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("WITH lim AS ( \
             SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period AS period \
             FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $1), \
         cur AS ( \
             SELECT b.user_id, b.period, b.period_start, \
                    LEAST($2, lim.tokens - b.spent - b.reserved) AS g \
             FROM budget_periods b JOIN lim ON b.period = lim.period \
             WHERE b.user_id = $1 AND lim.tokens IS NOT NULL \
               AND b.period_start = CASE lim.period WHEN 'day' THEN $4 WHEN 'week' THEN $5 \
                                    WHEN 'month' THEN $6 WHEN 'total' THEN $7 END \
             FOR UPDATE OF b), \
         upd AS ( \
             UPDATE budget_periods b SET reserved = b.reserved + cur.g, updated_at = now() \
             FROM cur WHERE b.user_id = cur.user_id AND b.period = cur.period \
               AND b.period_start = cur.period_start AND cur.g >= $3 \
             RETURNING cur.g AS g, cur.period, cur.period_start) \
         INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at, process_id, turn_id) \
         SELECT $8, $1, period, period_start, g, $9, $10, $11 FROM upd RETURNING amount")
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<BigInt, _>(ask.big)
    .bind::<BigInt, _>(ask.small)
    .bind::<Timestamptz, _>(Period::Day.start(ask.now))
    .bind::<Timestamptz, _>(Period::Week.start(ask.now))
    .bind::<Timestamptz, _>(Period::Month.start(ask.now))
    .bind::<Timestamptz, _>(Period::Total.start(ask.now))
    .bind::<SqlUuid, _>(id)
    .bind::<Timestamptz, _>(expires)
    .bind::<SqlUuid, _>(ask.process_id)
    .bind::<SqlUuid, _>(ask.turn_id)
    .get_result::<Granted>(conn)
    .map(move |r| {
        r.optional_row()
            .map(|g| g.map(|g| EarlyHold { id, amount: g.amount }))
    })
    .boxed()
}

/// Cuts the hold to `amount` (at most what it holds; 0 removes it) and gives the rest back
/// to the period, in the transaction that took it.
pub fn resize(
    conn: &mut AsyncPgConnection,
    early: EarlyHold,
    user_id: Uuid,
    amount: i64,
) -> BoxFuture<'static, diesel::QueryResult<()>> {
    match resized(early, user_id, amount) {
        None => futures_util::future::ready(Ok(())).boxed(),
        Some(statement) => statement.execute(conn).map(|r| r.map(drop)).boxed(),
    }
}

/// The statement [`resize`] sends (`None`: nothing to give back), to which the start adds
/// its user message ([`Joined::with`]): one statement fewer before its COMMIT.
pub fn resized(early: EarlyHold, user_id: Uuid, amount: i64) -> Option<Joined> {
    let amount = amount.clamp(0, early.amount);
    let give_back = early.amount - amount;
    if give_back == 0 {
        return None;
    }
    // One statement either way (a row must not be both updated and deleted in one).
    // Raw SQL: UPDATE … FROM a CTE.
    let hold = if amount == 0 {
        sql("DELETE FROM budget_holds WHERE id = $1 AND user_id = $2 \
             RETURNING period, period_start")
        .bind::<SqlUuid, _>(early.id)
        .bind::<SqlUuid, _>(user_id)
        .part()
    } else {
        sql(
            "UPDATE budget_holds SET amount = amount - $3 WHERE id = $1 AND user_id = $2 \
             RETURNING period, period_start",
        )
        .bind::<SqlUuid, _>(early.id)
        .bind::<SqlUuid, _>(user_id)
        .bind::<BigInt, _>(give_back)
        .part()
    };
    let period = sql(
        "UPDATE budget_periods b SET reserved = b.reserved - $1, updated_at = now() \
                      FROM h WHERE b.user_id = $2 AND b.period = h.period \
                       AND b.period_start = h.period_start",
    )
    .bind::<BigInt, _>(give_back)
    .bind::<SqlUuid, _>(user_id)
    .part();
    Some(joined(period).with("h", hold))
}

/// The early hold as the turn's hold, once fitted to `amount`.
pub fn fitted(
    early: EarlyHold,
    user_id: Uuid,
    limit: &Limit,
    now: DateTime<Utc>,
    amount: i64,
) -> Hold {
    Hold {
        id: early.id,
        user_id,
        period: limit.period,
        period_start: limit.period.start(now),
        amount,
        money: None,
    }
}
