//! Token budgets in Postgres: reserve before a model call with one conditional statement,
//! settle to the real usage after it, sweep holds a crashed process left behind.
//! Invariant: `spent + reserved <= limit` whenever a reservation is granted, and a
//! settlement charges at most what was reserved, so `spent <= limit`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use uuid::Uuid;

use crate::budget::Period;
use crate::db::prepared::sql;

/// A user's effective budget: the user's override, else the role's.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// `None`: unlimited.
    pub tokens: Option<i64>,
    pub period: Period,
}

impl Limit {
    /// From the effective budget column and the role's period name (a name this build does
    /// not know counts per month).
    pub fn from_columns(tokens: Option<i64>, period: &str) -> Self {
        Self {
            tokens,
            period: Period::parse(period).unwrap_or(Period::Month),
        }
    }
}

/// Tokens held for one model call.
#[derive(Debug, Clone)]
pub struct Hold {
    /// Row in `budget_holds`; nil when the budget is unlimited (nothing is held).
    pub id: Uuid,
    pub user_id: Uuid,
    pub period: Period,
    pub period_start: DateTime<Utc>,
    pub amount: i64,
}

impl Hold {
    pub fn is_limited(&self) -> bool {
        !self.id.is_nil()
    }
}

/// The answer to a reservation request.
#[derive(Debug)]
pub enum Reserve {
    Granted(Hold),
    /// Less is left for this period than the call needs (maybe nothing).
    Exhausted {
        resets_at: Option<DateTime<Utc>>,
        /// The least the call needed.
        need: i64,
        /// What was left (0: used up).
        left: i64,
        limit: Option<i64>,
    },
    /// Enough is left, but in-flight turns hold it right now.
    HeldByOthers,
}

/// Spending in the current period.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = BudgetStatus)]
pub struct Status {
    pub limit: Option<i64>,
    pub used: i64,
    pub reserved: i64,
    pub period: Period,
    pub resets_at: Option<DateTime<Utc>>,
}

#[derive(QueryableByName)]
struct LimitRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    tokens: Option<i64>,
    #[diesel(sql_type = Text)]
    period: String,
}

#[derive(QueryableByName)]
struct Granted {
    #[diesel(sql_type = BigInt)]
    amount: i64,
}

#[derive(QueryableByName)]
struct Totals {
    #[diesel(sql_type = BigInt)]
    spent: i64,
    #[diesel(sql_type = BigInt)]
    reserved: i64,
}

pub async fn limit_for(conn: &mut AsyncPgConnection, user_id: Uuid) -> diesel::QueryResult<Limit> {
    let row: Option<LimitRow> = sql(
        "SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period AS period \
         FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $1",
    )
    .bind::<SqlUuid, _>(user_id)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(match row {
        Some(r) => Limit::from_columns(r.tokens, &r.period),
        None => Limit {
            tokens: Some(0),
            period: Period::Month,
        },
    })
}

/// What one model call asks of the user's budget.
#[derive(Debug, Clone, Copy)]
pub struct ReserveAsk {
    pub user_id: Uuid,
    /// The user's rule, read in the same transaction.
    pub limit: Limit,
    /// Tokens to hold if that much is left.
    pub want: i64,
    /// The least worth holding.
    pub need: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: Duration,
    /// The server process running the turn: its holds are freed when it dies.
    pub process_id: Uuid,
    /// The turn the hold is for (`None`: not a turn's, a title's): freed by the sweeper
    /// once the turn no longer holds its conversation.
    pub turn_id: Option<Uuid>,
}

/// Holds up to `want` tokens (at least `need`) for one model call.
pub async fn reserve(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> diesel::QueryResult<Reserve> {
    let first = try_reserve(conn, ask).await?;
    reserve_after(conn, ask, first).await
}

/// The common case in one statement: lock the period row, grant min(want, what is left) if
/// at least `need` is left, record the hold. The future does not borrow the connection, so
/// it can be pipelined with other statements of the transaction. `None` means no grant: the
/// period row does not exist yet or too little is left; [`reserve_after`] tells which.
pub fn try_reserve(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> BoxFuture<'static, diesel::QueryResult<Option<Hold>>> {
    let start = ask.limit.period.start(ask.now);
    let Some(tokens) = ask.limit.tokens else {
        return future::ready(Ok(Some(unlimited_hold(ask)))).boxed();
    };
    let hold_id = Uuid::new_v4();
    let expires =
        ask.now + chrono::Duration::from_std(ask.hold_ttl).unwrap_or(chrono::Duration::hours(1));
    let (user_id, period) = (ask.user_id, ask.limit.period);
    sql("WITH cur AS ( \
             SELECT user_id, period, period_start, LEAST($4, $5 - spent - reserved) AS g \
             FROM budget_periods WHERE user_id = $1 AND period = $2 AND period_start = $3 \
             FOR UPDATE), \
         upd AS ( \
             UPDATE budget_periods b SET reserved = b.reserved + cur.g, updated_at = now() \
             FROM cur WHERE b.user_id = cur.user_id AND b.period = cur.period \
               AND b.period_start = cur.period_start AND cur.g >= $6 \
             RETURNING cur.g AS g) \
         INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at, process_id, turn_id) \
         SELECT $7, $1, $2, $3, g, $8, $9, $10 FROM upd RETURNING amount")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .bind::<BigInt, _>(ask.want)
    .bind::<BigInt, _>(tokens)
    .bind::<BigInt, _>(ask.need)
    .bind::<SqlUuid, _>(hold_id)
    .bind::<Timestamptz, _>(expires)
    .bind::<SqlUuid, _>(ask.process_id)
    .bind::<Nullable<SqlUuid>, _>(ask.turn_id)
    .get_result::<Granted>(conn)
    .map(move |r| {
        r.optional_row().map(|g| {
            g.map(|g| Hold {
                id: hold_id,
                user_id,
                period,
                period_start: start,
                amount: g.amount,
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
    }
}

/// Finishes a reservation after [`try_reserve`]: a grant stands; without one, creates the
/// period row if it was missing (first call of a period) and tries once more, else says
/// whether the budget is used up or held by other running turns.
pub async fn reserve_after(
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
        if let Some(hold) = try_reserve(conn, ask).await? {
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

/// Charges a call's real usage: at most its hold, which is released. Unlimited users have
/// no hold; their usage is added to the period row (created if needed). Pipelinable like
/// [`try_reserve`].
pub fn settle(
    conn: &mut AsyncPgConnection,
    hold: &Hold,
    actual: i64,
) -> BoxFuture<'static, diesel::QueryResult<i64>> {
    let actual = actual.max(0);
    if !hold.is_limited() {
        return sql(
            "INSERT INTO budget_periods AS b (user_id, period, period_start, spent) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, period, period_start) \
             DO UPDATE SET spent = b.spent + EXCLUDED.spent, updated_at = now()",
        )
        .bind::<SqlUuid, _>(hold.user_id)
        .bind::<Text, _>(period_name(hold.period))
        .bind::<Timestamptz, _>(hold.period_start)
        .bind::<BigInt, _>(actual)
        .execute(conn)
        .map(move |r| r.map(|_| actual))
        .boxed();
    }
    sql(
        "WITH h AS (DELETE FROM budget_holds WHERE id = $1 RETURNING user_id, period, period_start, amount) \
         UPDATE budget_periods b \
            SET spent = b.spent + LEAST($2, h.amount), reserved = b.reserved - h.amount, updated_at = now() \
           FROM h WHERE b.user_id = h.user_id AND b.period = h.period AND b.period_start = h.period_start \
         RETURNING LEAST($2, h.amount) AS amount",
    )
    .bind::<SqlUuid, _>(hold.id)
    .bind::<BigInt, _>(actual)
    .get_result::<Granted>(conn)
    .map(|r| r.optional_row().map(|c| c.map_or(0, |c| c.amount)))
    .boxed()
}

/// Frees holds whose time ran out (their process died), and turns' holds whose turn no
/// longer holds its conversation (it ended, or was taken over, without settling them: its
/// end could not be stored). A turn's claim and its holds are written and released in the
/// same transactions, so a live turn's hold is never taken. Returns how many tokens it
/// freed.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> diesel::QueryResult<i64> {
    let freed: Vec<Granted> = sql(
        "WITH gone AS (DELETE FROM budget_holds h WHERE h.expires_at < $1 \
                         OR (h.turn_id IS NOT NULL AND NOT EXISTS \
                             (SELECT 1 FROM conversations c WHERE c.active_turn_id = h.turn_id)) \
                       RETURNING user_id, period, period_start, amount), \
              sums AS (SELECT user_id, period, period_start, sum(amount)::BIGINT AS amount \
                       FROM gone GROUP BY 1, 2, 3) \
         UPDATE budget_periods b SET reserved = GREATEST(b.reserved - sums.amount, 0), updated_at = now() \
           FROM sums WHERE b.user_id = sums.user_id AND b.period = sums.period \
            AND b.period_start = sums.period_start \
         RETURNING sums.amount AS amount",
    )
    .bind::<Timestamptz, _>(now)
    .load(conn)
    .await?;
    Ok(freed.iter().map(|g| g.amount).sum())
}

/// The user's budget in the period containing `now`.
pub async fn status(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> diesel::QueryResult<Status> {
    let limit = limit_for(conn, user_id).await?;
    let start = limit.period.start(now);
    let t = totals(conn, user_id, limit.period, start).await?;
    Ok(Status {
        limit: limit.tokens,
        used: t.as_ref().map_or(0, |t| t.spent),
        reserved: t.map_or(0, |t| t.reserved),
        period: limit.period,
        resets_at: limit.period.resets_at(now),
    })
}

async fn ensure_row(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    period: Period,
    start: DateTime<Utc>,
) -> diesel::QueryResult<()> {
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

async fn totals(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    period: Period,
    start: DateTime<Utc>,
) -> diesel::QueryResult<Option<Totals>> {
    sql("SELECT spent, reserved FROM budget_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .get_result(conn)
    .await
    .optional_row()
}

fn period_name(p: Period) -> &'static str {
    match p {
        Period::Day => "day",
        Period::Week => "week",
        Period::Month => "month",
        Period::Total => "total",
    }
}

/// `Option` for single-row raw queries (diesel's `optional` needs the `QueryResult` trait).
pub(super) trait OptionalRow<T> {
    fn optional_row(self) -> diesel::QueryResult<Option<T>>;
}

impl<T> OptionalRow<T> for diesel::QueryResult<T> {
    fn optional_row(self) -> diesel::QueryResult<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(diesel::result::Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
