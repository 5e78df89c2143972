//! Money held for sandbox CPU time (DESIGN §15): the same ledger as model calls
//! (`money_periods`, `money_holds`, settled by [`super::budget_money::settle`]), but the hold
//! is a plain amount, the price of the run's whole CPU limit, not a token worst case. The
//! invariant stays: a hold is granted only while `spent + reserved <= limit`, and a
//! settlement charges at most its hold.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Numeric, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::budget::{period_name, OptionalRow};
use super::budget_money::{MoneyHold, MoneyLimit};
use crate::budget::Period;
use crate::db::prepared::sql;

/// The answer to [`reserve_amount`].
#[derive(Debug)]
pub enum AmountHold {
    /// No money budget applies to the user.
    Unlimited,
    Granted(MoneyHold),
    /// The budget is in another currency than the price.
    OtherCurrency(MoneyLimit),
    /// Less than `need` is free this period (`left` is what is free, held money aside).
    Refused {
        left: Decimal,
        limit: MoneyLimit,
        resets_at: Option<DateTime<Utc>>,
    },
}

/// What to hold, for whom.
pub struct AmountAsk {
    pub user_id: Uuid,
    pub period: Period,
    pub money: Option<MoneyLimit>,
    pub currency: String,
    pub amount: Decimal,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub process_id: Uuid,
}

#[derive(QueryableByName)]
struct Granted {
    #[diesel(sql_type = Numeric)]
    amount: Decimal,
}

#[derive(QueryableByName)]
struct Free {
    #[diesel(sql_type = Numeric)]
    free: Decimal,
}

/// Holds exactly `ask.amount` of the user's money budget, or says why not. The period row is
/// created first when missing; the grant is one conditional statement (`FOR UPDATE`), so
/// concurrent runs never hold more than the limit leaves.
pub async fn reserve_amount(
    conn: &mut AsyncPgConnection,
    ask: &AmountAsk,
) -> diesel::QueryResult<AmountHold> {
    let Some(limit) = ask.money.clone() else {
        return Ok(AmountHold::Unlimited);
    };
    if limit.currency != ask.currency {
        return Ok(AmountHold::OtherCurrency(limit));
    }
    let start = ask.period.start(ask.now);
    // Raw SQL: ON CONFLICT DO NOTHING, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql(
        "INSERT INTO money_periods (user_id, period, period_start, currency) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(ask.period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(limit.currency.clone())
    .execute(conn)
    .await?;
    let hold_id = Uuid::new_v4();
    // Raw SQL: a CTE that checks and reserves in one statement.
    let granted: Option<Granted> = sql("WITH cur AS ( \
             SELECT user_id, period, period_start, currency FROM money_periods \
             WHERE user_id = $1 AND period = $2 AND period_start = $3 AND currency = $4 \
               AND $6 - spent - reserved >= $5 \
             FOR UPDATE), \
         upd AS ( \
             UPDATE money_periods m SET reserved = m.reserved + $5, updated_at = now() \
             FROM cur WHERE m.user_id = cur.user_id AND m.period = cur.period \
               AND m.period_start = cur.period_start AND m.currency = cur.currency \
             RETURNING $5::NUMERIC AS g) \
         INSERT INTO money_holds (id, user_id, period, period_start, currency, amount, \
                                  expires_at, process_id, turn_id) \
         SELECT $7, $1, $2, $3, $4, g, $8, $9, NULL FROM upd RETURNING amount")
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(ask.period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(limit.currency.clone())
    .bind::<Numeric, _>(ask.amount)
    .bind::<Numeric, _>(limit.amount)
    .bind::<SqlUuid, _>(hold_id)
    .bind::<Timestamptz, _>(ask.expires_at)
    .bind::<SqlUuid, _>(ask.process_id)
    .get_result(conn)
    .await
    .optional_row()?;
    if let Some(g) = granted {
        return Ok(AmountHold::Granted(MoneyHold {
            id: hold_id,
            user_id: ask.user_id,
            period: ask.period,
            period_start: start,
            currency: limit.currency,
            amount: g.amount,
            output_room: 0,
        }));
    }
    // Raw SQL: arithmetic on a bound value, prepared once per connection and pipelined on the turn's path (see db::prepared).
    let free: Option<Free> = sql("SELECT $5 - spent - reserved AS free FROM money_periods \
         WHERE user_id = $1 AND period = $2 AND period_start = $3 AND currency = $4")
    .bind::<SqlUuid, _>(ask.user_id)
    .bind::<Text, _>(period_name(ask.period))
    .bind::<Timestamptz, _>(start)
    .bind::<Text, _>(limit.currency.clone())
    .bind::<Numeric, _>(limit.amount)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(AmountHold::Refused {
        left: free.map_or(limit.amount, |f| f.free).max(Decimal::ZERO),
        resets_at: ask.period.resets_at(ask.now),
        limit,
    })
}
