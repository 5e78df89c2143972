//! Budgets in money: the same reserve / settle / sweep as the token budget
//! ([`super::budget`]), in exact decimals and a ledger of its own (`money_periods`,
//! `money_holds`, one row per user, period and currency), so a role may cap tokens, money or
//! both and the token path stays as fast as it was. Invariant as for tokens:
//! `spent + reserved <= limit` whenever a hold is granted, a settlement charges at most its
//! hold, so `spent <= limit`.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Nullable, Numeric, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::budget::{period_name, OptionalRow, ReserveAsk};
use crate::budget::Period;
use crate::db::prepared::sql;
use crate::domain::pricing::Price;

/// A role's money cap per period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoneyLimit {
    pub amount: Decimal,
    pub currency: String,
}

/// Money held for one model call.
#[derive(Debug, Clone)]
pub struct MoneyHold {
    pub id: Uuid,
    pub user_id: Uuid,
    pub period: Period,
    pub period_start: DateTime<Utc>,
    pub currency: String,
    pub amount: Decimal,
    /// Output tokens the hold pays for after the call's input.
    pub output_room: i64,
}

/// The first try at a money hold.
#[derive(Debug)]
pub enum Attempt {
    /// No money budget applies.
    Unlimited,
    Granted(MoneyHold),
    /// No grant yet: the period row is missing or too little is free ([`reserve_after`]).
    Missed,
}

/// A refused money hold.
#[derive(Debug, Clone)]
pub enum MoneyRefusal {
    /// Less is left this period than the call's least useful cost.
    Exhausted {
        resets_at: Option<DateTime<Utc>>,
        need: Decimal,
        left: Decimal,
        limit: MoneyLimit,
    },
    /// Enough is left, but running turns hold it.
    HeldByOthers,
    /// The model has no price (or none in the budget's currency), so the money budget
    /// cannot pay for it.
    Unpriced,
}

/// What the call costs at worst (`want`) and at least usefully (`need`).
struct Costs {
    want: Decimal,
    need: Decimal,
}

fn costs(ask: &ReserveAsk, price: &Price) -> Costs {
    let input = u64::try_from(ask.input.max(0)).unwrap_or(0);
    let out = |tokens: i64| u64::try_from((tokens - ask.input).max(0)).unwrap_or(0);
    Costs {
        want: price.worst_case(input, out(ask.want)),
        need: price.worst_case(input, out(ask.need)),
    }
}

#[derive(QueryableByName)]
struct Granted {
    #[diesel(sql_type = Numeric)]
    amount: Decimal,
}

#[derive(QueryableByName)]
struct Totals {
    #[diesel(sql_type = Numeric)]
    spent: Decimal,
    #[diesel(sql_type = Numeric)]
    reserved: Decimal,
}

/// Holds up to the call's worst case (at least its least useful cost) in one statement, like
/// [`super::budget::try_reserve`]; pipelinable.
pub fn try_reserve(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> BoxFuture<'static, diesel::QueryResult<Attempt>> {
    let Some(limit) = ask.limit.money.clone() else {
        return future::ready(Ok(Attempt::Unlimited)).boxed();
    };
    let Some(price) = ask.price.as_ref().filter(|p| p.currency == limit.currency) else {
        return future::ready(Ok(Attempt::Missed)).boxed();
    };
    let Costs { want, need } = costs(ask, price);
    let input = u64::try_from(ask.input.max(0)).unwrap_or(0);
    let price = price.clone();
    let (user_id, period) = (ask.user_id, ask.limit.period);
    let start = period.start(ask.now);
    let hold_id = Uuid::new_v4();
    let expires = ask.hold_expires();
    let currency = limit.currency.clone();
    // Raw SQL: a CTE that checks and reserves in one statement.
    sql("WITH cur AS ( \
             SELECT user_id, period, period_start, currency, \
                    LEAST($5, $6 - spent - reserved) AS g \
             FROM money_periods \
             WHERE user_id = $1 AND period = $2 AND period_start = $3 AND currency = $4 \
             FOR UPDATE), \
         upd AS ( \
             UPDATE money_periods m SET reserved = m.reserved + cur.g, updated_at = now() \
             FROM cur WHERE m.user_id = cur.user_id AND m.period = cur.period \
               AND m.period_start = cur.period_start AND m.currency = cur.currency \
               AND cur.g >= $7 \
             RETURNING cur.g AS g) \
         INSERT INTO money_holds (id, user_id, period, period_start, currency, amount, \
                                  expires_at, process_id, turn_id, conversation_id) \
         SELECT $8, $1, $2, $3, $4, g, $9, $10, $11, $12 FROM upd RETURNING amount")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(currency.clone())
    .bind::<Numeric, _>(want)
    .bind::<Numeric, _>(limit.amount)
    .bind::<Numeric, _>(need)
    .bind::<SqlUuid, _>(hold_id)
    .bind::<Timestamptz, _>(expires)
    .bind::<SqlUuid, _>(ask.process_id)
    .bind::<Nullable<SqlUuid>, _>(ask.turn_id())
    .bind::<Nullable<SqlUuid>, _>(ask.conversation_id())
    .get_result::<Granted>(conn)
    .map(move |r| {
        r.optional_row().map(|g| match g {
            Some(g) => Attempt::Granted(MoneyHold {
                id: hold_id,
                user_id,
                period,
                period_start: start,
                currency,
                output_room: price.output_affordable(g.amount, input),
                amount: g.amount,
            }),
            None => Attempt::Missed,
        })
    })
    .boxed()
}

/// Finishes a money reservation after [`try_reserve`]: creates the period row on a
/// period's first call and tries once more, else says why there is no grant.
pub async fn reserve_after(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
    first: Attempt,
) -> diesel::QueryResult<Result<Option<MoneyHold>, MoneyRefusal>> {
    let limit = match first {
        Attempt::Unlimited => return Ok(Ok(None)),
        Attempt::Granted(hold) => return Ok(Ok(Some(hold))),
        Attempt::Missed => match &ask.limit.money {
            Some(limit) => limit.clone(),
            None => return Ok(Ok(None)),
        },
    };
    let Some(price) = ask.price.as_ref().filter(|p| p.currency == limit.currency) else {
        return Ok(Err(MoneyRefusal::Unpriced));
    };
    let start = ask.limit.period.start(ask.now);
    let mut current = totals(conn, ask, &limit.currency, start).await?;
    if current.is_none() {
        ensure_row(conn, ask, &limit.currency, start).await?;
    }
    let Costs { need, .. } = costs(ask, price);
    let free = |t: &Option<Totals>| {
        t.as_ref()
            .map_or(limit.amount, |t| limit.amount - t.spent - t.reserved)
    };
    if free(&current) >= need {
        if let Attempt::Granted(hold) = try_reserve(conn, ask).await? {
            return Ok(Ok(Some(hold)));
        }
        current = totals(conn, ask, &limit.currency, start).await?;
    }
    let spent = current.as_ref().map_or(Decimal::ZERO, |t| t.spent);
    if limit.amount - spent < need {
        let held = current.as_ref().map_or(Decimal::ZERO, |t| t.reserved);
        Ok(Err(MoneyRefusal::Exhausted {
            resets_at: ask.limit.period.resets_at(ask.now),
            need,
            left: (limit.amount - spent - held).max(Decimal::ZERO),
            limit,
        }))
    } else {
        Ok(Err(MoneyRefusal::HeldByOthers))
    }
}

/// Charges a call's real cost, at most its hold, and releases the hold. Pipelinable.
pub fn settle(
    conn: &mut AsyncPgConnection,
    hold: &MoneyHold,
    cost: Decimal,
) -> BoxFuture<'static, diesel::QueryResult<()>> {
    // Raw SQL: DELETE … RETURNING in a CTE feeding an UPDATE.
    sql("WITH h AS (DELETE FROM money_holds WHERE id = $1 \
                    RETURNING user_id, period, period_start, currency, amount) \
         UPDATE money_periods m \
            SET spent = m.spent + LEAST($2, h.amount), reserved = m.reserved - h.amount, \
                updated_at = now() \
           FROM h WHERE m.user_id = h.user_id AND m.period = h.period \
            AND m.period_start = h.period_start AND m.currency = h.currency")
    .bind::<SqlUuid, _>(hold.id)
    .bind::<Numeric, _>(cost.max(Decimal::ZERO))
    .execute(conn)
    .map(|r| r.map(drop))
    .boxed()
}

/// Frees money holds whose time ran out or whose turn no longer holds its conversation
/// (as [`super::budget::sweep`] does for tokens). Returns how many it freed.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> diesel::QueryResult<usize> {
    // Raw SQL: DELETE … RETURNING in a CTE feeding an UPDATE.
    sql(
        "WITH gone AS (DELETE FROM money_holds h WHERE h.expires_at < $1 \
                         OR (h.conversation_id IS NOT NULL AND NOT EXISTS \
                             (SELECT 1 FROM conversations c \
                               WHERE c.id = h.conversation_id AND c.active_turn_id = h.turn_id)) \
                       RETURNING user_id, period, period_start, currency, amount), \
              sums AS (SELECT user_id, period, period_start, currency, sum(amount) AS amount \
                       FROM gone GROUP BY 1, 2, 3, 4) \
         UPDATE money_periods m SET reserved = GREATEST(m.reserved - sums.amount, 0), \
                                    updated_at = now() \
           FROM sums WHERE m.user_id = sums.user_id AND m.period = sums.period \
            AND m.period_start = sums.period_start AND m.currency = sums.currency",
    )
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await
}

/// Spending in money in the period containing `now`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct MoneyStatus {
    /// Exact decimal strings.
    #[schema(value_type = String)]
    #[serde(serialize_with = "crate::domain::pricing::decimal_text::serialize")]
    pub limit: Decimal,
    #[schema(value_type = String)]
    #[serde(serialize_with = "crate::domain::pricing::decimal_text::serialize")]
    pub used: Decimal,
    #[schema(value_type = String)]
    #[serde(serialize_with = "crate::domain::pricing::decimal_text::serialize")]
    pub reserved: Decimal,
    pub currency: String,
}

pub async fn status(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    period: Period,
    limit: &MoneyLimit,
    now: DateTime<Utc>,
) -> diesel::QueryResult<MoneyStatus> {
    // Raw SQL: prepared once per connection and pipelined on the turn's path (see db::prepared).
    let t: Option<Totals> = sql("SELECT spent, reserved FROM money_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3 AND currency = $4")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(period_name(period))
    .bind::<Timestamptz, _>(period.start(now))
    .bind::<Text, _>(limit.currency.clone())
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(MoneyStatus {
        limit: limit.amount,
        used: t.as_ref().map_or(Decimal::ZERO, |t| t.spent),
        reserved: t.map_or(Decimal::ZERO, |t| t.reserved),
        currency: limit.currency.clone(),
    })
}

async fn totals(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
    currency: &str,
    start: DateTime<Utc>,
) -> diesel::QueryResult<Option<Totals>> {
    // Raw SQL: prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("SELECT spent, reserved FROM money_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3 AND currency = $4")
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(ask.limit.period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(currency.to_owned())
    .get_result(conn)
    .await
    .optional_row()
}

async fn ensure_row(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
    currency: &str,
    start: DateTime<Utc>,
) -> diesel::QueryResult<()> {
    // Raw SQL: ON CONFLICT DO NOTHING, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql(
        "INSERT INTO money_periods (user_id, period, period_start, currency) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(ask.limit.period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(currency.to_owned())
    .execute(conn)
    .await
    .map(drop)
}
