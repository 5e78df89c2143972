//! The token half of a budget's reservation ([`super::budget`] joins it with the money
//! half): one conditional statement to reserve, one to settle, and the slower path for a
//! period's first call or too little left.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use uuid::Uuid;

use super::budget::{period_name, Hold, OptionalRow, Reserve, ReserveAsk};
use crate::budget::Period;
use crate::db::prepared::{joined, sql, Joined, Part};

#[derive(QueryableByName)]
pub(super) struct Granted {
    #[diesel(sql_type = BigInt)]
    pub(super) amount: i64,
}

#[derive(QueryableByName)]
pub(super) struct Totals {
    #[diesel(sql_type = BigInt)]
    pub(super) spent: i64,
    #[diesel(sql_type = BigInt)]
    pub(super) reserved: i64,
}

/// The token budget's common case in one statement: lock the period row, grant
/// min(want, what is left) if at least `need` is left, record the hold. The future does not
/// borrow the connection, so it can be pipelined with other statements of the transaction.
/// `None` means no grant: the period row does not exist yet or too little is left;
/// [`reserve_tokens_after`] tells which.
pub(super) fn try_reserve_tokens(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> BoxFuture<'static, diesel::QueryResult<Option<Hold>>> {
    let start = ask.limit.period.start(ask.now);
    let Some(tokens) = ask.limit.tokens else {
        return future::ready(Ok(Some(unlimited_hold(ask)))).boxed();
    };
    let hold_id = Uuid::new_v4();
    let expires = ask.hold_expires();
    let (user_id, period) = (ask.user_id, ask.limit.period);
    // Raw SQL: a CTE that checks and reserves in one statement.
    sql("WITH cur AS ( \
             SELECT user_id, period, period_start, LEAST($4, $5 - spent - reserved) AS g \
             FROM budget_periods WHERE user_id = $1 AND period = $2 AND period_start = $3 \
             FOR UPDATE), \
         upd AS ( \
             UPDATE budget_periods b SET reserved = b.reserved + cur.g, updated_at = now() \
             FROM cur WHERE b.user_id = cur.user_id AND b.period = cur.period \
               AND b.period_start = cur.period_start AND cur.g >= $6 \
             RETURNING cur.g AS g) \
         INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at, \
                                   process_id, turn_id, conversation_id) \
         SELECT $7, $1, $2, $3, g, $8, $9, $10, $11 FROM upd RETURNING amount")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .bind::<BigInt, _>(ask.want)
    .bind::<BigInt, _>(tokens)
    .bind::<BigInt, _>(ask.need)
    .bind::<SqlUuid, _>(hold_id)
    .bind::<Timestamptz, _>(expires)
    .bind::<SqlUuid, _>(ask.process_id)
    .bind::<Nullable<SqlUuid>, _>(ask.turn_id())
    .bind::<Nullable<SqlUuid>, _>(ask.conversation_id())
    .get_result::<Granted>(conn)
    .map(move |r| {
        r.optional_row().map(|g| {
            g.map(|g| Hold {
                id: hold_id,
                user_id,
                period,
                period_start: start,
                amount: g.amount,
                money: None,
            })
        })
    })
    .boxed()
}

/// The grant of an unlimited budget: nothing is held; the settlement records the usage.
pub fn unlimited_hold(ask: &ReserveAsk) -> Hold {
    Hold {
        id: Uuid::nil(),
        user_id: ask.user_id,
        period: ask.limit.period,
        period_start: ask.limit.period.start(ask.now),
        amount: ask.want,
        money: None,
    }
}

/// Finishes a token reservation after [`try_reserve_tokens`]: a grant stands; without one,
/// creates the period row if it was missing (first call of a period) and tries once more,
/// else says whether the budget is used up or held by other running turns.
pub(super) async fn reserve_tokens_after(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
    first: Option<Hold>,
) -> diesel::QueryResult<Reserve> {
    if let Some(hold) = first {
        return Ok(Reserve::Granted(hold));
    }
    let Some(tokens) = ask.limit.tokens else {
        return Ok(Reserve::HeldByOthers);
    };
    let start = ask.limit.period.start(ask.now);
    let mut current = totals(conn, ask.user_id, ask.limit.period, start).await?;
    if current.is_none() {
        ensure_row(conn, ask.user_id, ask.limit.period, start).await?;
    }
    // Try once more when enough looks free: the period's row may have been created by a
    // concurrent turn since the first try (the first turns of every new period race for
    // it), or holds may have been released.
    let free = |t: &Option<Totals>| t.as_ref().map_or(tokens, |t| tokens - t.spent - t.reserved);
    if free(&current) >= ask.need {
        if let Some(hold) = try_reserve_tokens(conn, ask).await? {
            return Ok(Reserve::Granted(hold));
        }
        current = totals(conn, ask.user_id, ask.limit.period, start).await?;
    }
    let spent = current.as_ref().map_or(0, |t| t.spent);
    if tokens - spent < ask.need {
        // What is free right now, as `GET /api/me` counts it (running turns' holds are taken).
        let held = current.as_ref().map_or(0, |t| t.reserved);
        Ok(Reserve::Exhausted {
            resets_at: ask.limit.period.resets_at(ask.now),
            need: ask.need,
            left: (tokens - spent - held).max(0),
            limit: Some(tokens),
        })
    } else {
        Ok(Reserve::HeldByOthers)
    }
}

/// Charges tokens: at most the hold, which is released. Unlimited users have no hold; their
/// usage is added to the period row (created if needed).
pub(super) fn settle_tokens(
    conn: &mut AsyncPgConnection,
    hold: &Hold,
    actual: i64,
) -> BoxFuture<'static, diesel::QueryResult<i64>> {
    let actual = actual.max(0);
    if !hold.is_limited() {
        return joined(unlimited_charge(hold, actual, Guard::None))
            .execute(conn)
            .map(move |r| r.map(|_| actual))
            .boxed();
    }
    joined(sql("SELECT amount FROM s").part())
        .with("h", hold_release(hold, Guard::None))
        .with("s", hold_charge(actual))
        .get_result::<Granted>(conn)
        .map(|r| r.optional_row().map(|c| c.map_or(0, |c| c.amount)))
        .boxed()
}

/// Adds to `statement` the settlement [`settle_tokens`] makes, as its parts `h` and `s`.
pub(super) fn settle_tokens_within(
    statement: Joined,
    hold: &Hold,
    actual: i64,
    guard: Guard,
) -> Joined {
    let actual = actual.max(0);
    if !hold.is_limited() {
        return statement.with("s", unlimited_charge(hold, actual, guard));
    }
    statement
        .with("h", hold_release(hold, guard))
        .with("s", hold_charge(actual))
}

/// Whether a settlement sent within a larger statement waits for another of its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Its budget rows are its statement's first locks.
    None,
    /// Its budget rows are locked only once the statement's part `r` (a turn's claim,
    /// released) has returned a row: the conversation row before the budget's, as everywhere
    /// ([`crate::turn::sql`]).
    Released,
}

/// The hold's row deleted, returning what the period is charged from (part `h`).
fn hold_release(hold: &Hold, guard: Guard) -> Part {
    // Raw SQL: DELETE … RETURNING, the CTE feeding `hold_charge`.
    let text = match guard {
        Guard::None => {
            "DELETE FROM budget_holds WHERE id = $1 \
             RETURNING user_id, period, period_start, amount"
        }
        Guard::Released => {
            "DELETE FROM budget_holds WHERE id = $1 AND EXISTS (SELECT 1 FROM r) \
             RETURNING user_id, period, period_start, amount"
        }
    };
    sql(text).bind::<SqlUuid, _>(hold.id).part()
}

/// The period charged at most the released hold (`h`), which it no longer reserves.
fn hold_charge(actual: i64) -> Part {
    sql("UPDATE budget_periods b \
            SET spent = b.spent + LEAST($1, h.amount), reserved = b.reserved - h.amount, \
                updated_at = now() \
           FROM h WHERE b.user_id = h.user_id AND b.period = h.period \
            AND b.period_start = h.period_start \
         RETURNING LEAST($1, h.amount) AS amount")
    .bind::<BigInt, _>(actual)
    .part()
}

/// An unlimited user's usage added to the period row, created if needed.
fn unlimited_charge(hold: &Hold, actual: i64, guard: Guard) -> Part {
    // Raw SQL: ON CONFLICT with an expression update, prepared once per connection and pipelined on the turn's path (see db::prepared).
    let text = match guard {
        Guard::None => {
            "INSERT INTO budget_periods AS b (user_id, period, period_start, spent) \
             SELECT $1, $2, $3, $4 \
             ON CONFLICT (user_id, period, period_start) \
             DO UPDATE SET spent = b.spent + EXCLUDED.spent, updated_at = now()"
        }
        Guard::Released => {
            "INSERT INTO budget_periods AS b (user_id, period, period_start, spent) \
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM r) \
             ON CONFLICT (user_id, period, period_start) \
             DO UPDATE SET spent = b.spent + EXCLUDED.spent, updated_at = now()"
        }
    };
    sql(text)
        .bind::<SqlUuid, _>(hold.user_id)
        .bind::<Text, _>(period_name(hold.period))
        .bind::<Timestamptz, _>(hold.period_start)
        .bind::<BigInt, _>(actual)
        .part()
}

async fn ensure_row(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    period: Period,
    start: DateTime<Utc>,
) -> diesel::QueryResult<()> {
    // Raw SQL: ON CONFLICT DO NOTHING, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql(
        "INSERT INTO budget_periods (user_id, period, period_start) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .execute(conn)
    .await
    .map(|_| ())
}

pub(super) async fn totals(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    period: Period,
    start: DateTime<Utc>,
) -> diesel::QueryResult<Option<Totals>> {
    // Raw SQL: prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("SELECT spent, reserved FROM budget_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .get_result(conn)
    .await
    .optional_row()
}
