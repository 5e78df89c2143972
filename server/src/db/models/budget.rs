//! Token budgets in Postgres: reserve before a model call with one conditional statement,
//! settle to the real usage after it, sweep holds a crashed process left behind.
//! Invariant: `spent + reserved <= limit` whenever a reservation is granted, and a
//! settlement charges at most what was reserved, so `spent <= limit`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::budget::Period;

/// A user's effective budget: the user's override, else the role's.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// `None`: unlimited.
    pub tokens: Option<i64>,
    pub period: Period,
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
    /// Spent up to the limit for this period.
    Exhausted {
        resets_at: Option<DateTime<Utc>>,
    },
    /// Enough is left, but in-flight turns hold it right now.
    HeldByOthers,
}

/// Spending in the current period.
#[derive(Debug, Clone, serde::Serialize)]
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
    let row: Option<LimitRow> = diesel::sql_query(
        "SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period AS period \
         FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $1",
    )
    .bind::<SqlUuid, _>(user_id)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(match row {
        Some(r) => Limit {
            tokens: r.tokens,
            period: Period::parse(&r.period).unwrap_or(Period::Month),
        },
        None => Limit {
            tokens: Some(0),
            period: Period::Month,
        },
    })
}

/// Holds up to `want` tokens (at least `need`) for one model call.
pub async fn reserve(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    want: i64,
    need: i64,
    now: DateTime<Utc>,
    hold_ttl: Duration,
) -> diesel::QueryResult<Reserve> {
    let limit = limit_for(conn, user_id).await?;
    let start = limit.period.start(now);
    ensure_row(conn, user_id, limit.period, start).await?;
    let Some(tokens) = limit.tokens else {
        return Ok(Reserve::Granted(Hold {
            id: Uuid::nil(),
            user_id,
            period: limit.period,
            period_start: start,
            amount: want,
        }));
    };
    let hold_id = Uuid::new_v4();
    let expires = now + chrono::Duration::from_std(hold_ttl).unwrap_or(chrono::Duration::hours(1));
    // One statement: lock the row, grant min(want, what is left) if at least `need` is
    // left, record the hold.
    let granted: Option<Granted> = diesel::sql_query(
        "WITH cur AS ( \
             SELECT user_id, period, period_start, LEAST($4, $5 - spent - reserved) AS g \
             FROM budget_periods WHERE user_id = $1 AND period = $2 AND period_start = $3 \
             FOR UPDATE), \
         upd AS ( \
             UPDATE budget_periods b SET reserved = b.reserved + cur.g, updated_at = now() \
             FROM cur WHERE b.user_id = cur.user_id AND b.period = cur.period \
               AND b.period_start = cur.period_start AND cur.g >= $6 \
             RETURNING cur.g AS g) \
         INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at) \
         SELECT $7, $1, $2, $3, g, $8 FROM upd RETURNING amount",
    )
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(limit.period))
    .bind::<Timestamptz, _>(start)
    .bind::<BigInt, _>(want)
    .bind::<BigInt, _>(tokens)
    .bind::<BigInt, _>(need)
    .bind::<SqlUuid, _>(hold_id)
    .bind::<Timestamptz, _>(expires)
    .get_result(conn)
    .await
    .optional_row()?;
    if let Some(g) = granted {
        return Ok(Reserve::Granted(Hold {
            id: hold_id,
            user_id,
            period: limit.period,
            period_start: start,
            amount: g.amount,
        }));
    }
    let t = totals(conn, user_id, limit.period, start).await?;
    if tokens - t.spent < need {
        Ok(Reserve::Exhausted {
            resets_at: limit.period.resets_at(now),
        })
    } else {
        Ok(Reserve::HeldByOthers)
    }
}

/// Charges `actual` tokens (at most the hold) and releases the hold. Returns what was
/// charged. Settling a hold twice charges nothing the second time.
pub async fn settle(
    conn: &mut AsyncPgConnection,
    hold: &Hold,
    actual: i64,
) -> diesel::QueryResult<i64> {
    let actual = actual.max(0);
    if !hold.is_limited() {
        diesel::sql_query(
            "UPDATE budget_periods SET spent = spent + $4, updated_at = now() \
             WHERE user_id = $1 AND period = $2 AND period_start = $3",
        )
        .bind::<SqlUuid, _>(hold.user_id)
        .bind::<Text, _>(period_name(hold.period))
        .bind::<Timestamptz, _>(hold.period_start)
        .bind::<BigInt, _>(actual)
        .execute(conn)
        .await?;
        return Ok(actual);
    }
    let charged: Option<Granted> = diesel::sql_query(
        "WITH h AS (DELETE FROM budget_holds WHERE id = $1 RETURNING user_id, period, period_start, amount) \
         UPDATE budget_periods b \
            SET spent = b.spent + LEAST($2, h.amount), reserved = b.reserved - h.amount, updated_at = now() \
           FROM h WHERE b.user_id = h.user_id AND b.period = h.period AND b.period_start = h.period_start \
         RETURNING LEAST($2, h.amount) AS amount",
    )
    .bind::<SqlUuid, _>(hold.id)
    .bind::<BigInt, _>(actual)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(charged.map(|c| c.amount).unwrap_or(0))
}

/// Frees holds whose time ran out (their process died). Returns how many tokens it freed.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> diesel::QueryResult<i64> {
    let freed: Vec<Granted> = diesel::sql_query(
        "WITH gone AS (DELETE FROM budget_holds WHERE expires_at < $1 \
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
        used: t.spent,
        reserved: t.reserved,
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
    diesel::sql_query(
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
) -> diesel::QueryResult<Totals> {
    let t: Option<Totals> = diesel::sql_query(
        "SELECT spent, reserved FROM budget_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3",
    )
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(t.unwrap_or(Totals {
        spent: 0,
        reserved: 0,
    }))
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
trait OptionalRow<T> {
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
