//! Token budgets in Postgres: reserve before a model call with one conditional statement,
//! settle to the real usage after it, sweep holds a crashed process left behind. A money
//! budget ([`super::budget_money`]) is reserved and settled with it, in the same round trips.
//! Invariant: `spent + reserved <= limit` whenever a reservation is granted, and a
//! settlement charges at most what was reserved, so `spent <= limit`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::budget_money::{self, Attempt, MoneyHold, MoneyLimit, MoneyRefusal};
pub use super::budget_tokens::unlimited_hold;
pub use super::budget_tokens::Guard;
use super::budget_tokens::{
    reserve_tokens_after, settle_tokens, settle_tokens_within, totals, try_reserve_tokens, Granted,
};
use crate::budget::Period;
use crate::db::prepared::{sql, Joined};
use crate::domain::pricing::Price;

/// A user's effective budget: the user's token override, else the role's; the role's money cap.
#[derive(Debug, Clone)]
pub struct Limit {
    /// `None`: unlimited.
    pub tokens: Option<i64>,
    pub period: Period,
    /// `None`: no money budget.
    pub money: Option<MoneyLimit>,
}

impl Limit {
    /// From the effective budget column and the role's period name (a name this build does
    /// not know counts per month).
    pub fn from_columns(tokens: Option<i64>, period: &str) -> Self {
        Self {
            tokens,
            period: Period::parse(period).unwrap_or(Period::Month),
            money: None,
        }
    }

    /// With the role's money columns (both set, or no money budget).
    pub fn with_money(mut self, amount: Option<Decimal>, currency: Option<String>) -> Self {
        self.money = amount
            .zip(currency)
            .map(|(amount, currency)| MoneyLimit { amount, currency });
        self
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
    /// The money held with the tokens, when a money budget applies.
    pub money: Option<MoneyHold>,
}

impl Hold {
    pub fn is_limited(&self) -> bool {
        !self.id.is_nil()
    }

    /// Output tokens the hold leaves for a call of `input` tokens in: what the tokens and the
    /// money held both pay for.
    pub fn output_room(&self, input: i64) -> i64 {
        let tokens = self.amount - input;
        self.money
            .as_ref()
            .map_or(tokens, |m| tokens.min(m.output_room))
    }
}

/// What one model call really used, as the budgets charge it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub tokens: i64,
    /// At the model's price (zero when unpriced: no money budget applied).
    pub cost: Decimal,
}

impl Spend {
    pub fn tokens(tokens: i64) -> Self {
        Self {
            tokens,
            cost: Decimal::ZERO,
        }
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
    /// The money budget refused (used up, held by others, or the model is unpriced).
    Money(MoneyRefusal),
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
    /// The money budget in the same period (null: none).
    pub money: Option<budget_money::MoneyStatus>,
}

#[derive(QueryableByName)]
struct LimitRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    tokens: Option<i64>,
    #[diesel(sql_type = Text)]
    period: String,
    #[diesel(sql_type = Nullable<diesel::sql_types::Numeric>)]
    amount: Option<Decimal>,
    #[diesel(sql_type = Nullable<Text>)]
    currency: Option<String>,
}

pub async fn limit_for(conn: &mut AsyncPgConnection, user_id: Uuid) -> diesel::QueryResult<Limit> {
    // Raw SQL: COALESCE across a join, prepared once per connection and pipelined on the turn's path (see db::prepared).
    let row: Option<LimitRow> = sql(
        "SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period AS period, \
                r.budget_amount AS amount, r.budget_currency AS currency \
         FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $1",
    )
    .bind::<SqlUuid, _>(user_id)
    .get_result(conn)
    .await
    .optional_row()?;
    Ok(match row {
        Some(r) => Limit::from_columns(r.tokens, &r.period).with_money(r.amount, r.currency),
        None => Limit {
            tokens: Some(0),
            period: Period::Month,
            money: None,
        },
    })
}

/// What one model call asks of the user's budget.
#[derive(Debug, Clone)]
pub struct ReserveAsk {
    pub user_id: Uuid,
    /// The user's rule, read in the same transaction.
    pub limit: Limit,
    /// The call's estimated input tokens (part of `want` and `need`).
    pub input: i64,
    /// The model's price in force, which a money budget reserves at.
    pub price: Option<Price>,
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
    pub turn: Option<HoldTurn>,
}

/// The turn a hold is for, and the conversation it claims: the sweeper reads that row by its
/// key to see whether the turn still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldTurn {
    pub turn_id: Uuid,
    pub conversation_id: Uuid,
}

impl ReserveAsk {
    /// When a hold taken for this ask lapses (the sweeper frees it then, if nothing did).
    pub fn hold_expires(&self) -> DateTime<Utc> {
        self.now + chrono::Duration::from_std(self.hold_ttl).unwrap_or(chrono::Duration::hours(1))
    }

    /// The hold's `turn_id` column.
    pub fn turn_id(&self) -> Option<Uuid> {
        self.turn.map(|t| t.turn_id)
    }

    /// The hold's `conversation_id` column.
    pub fn conversation_id(&self) -> Option<Uuid> {
        self.turn.map(|t| t.conversation_id)
    }
}

/// Holds up to `want` tokens (at least `need`) for one model call, and its cost in money
/// when a money budget applies.
pub async fn reserve(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> diesel::QueryResult<Reserve> {
    let first = try_reserve(conn, ask).await?;
    reserve_after(conn, ask, first).await
}

/// The first try of both budgets, sent together.
#[derive(Debug)]
pub struct FirstTry {
    tokens: Option<Hold>,
    money: Attempt,
}

/// The common case in one round trip: the token statement ([`try_reserve_tokens`]) and the
/// money one ([`budget_money::try_reserve`]), pipelinable like each of them.
pub fn try_reserve(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
) -> BoxFuture<'static, diesel::QueryResult<FirstTry>> {
    future::try_join(
        try_reserve_tokens(conn, ask),
        budget_money::try_reserve(conn, ask),
    )
    .map(|r| r.map(|(tokens, money)| FirstTry { tokens, money }))
    .boxed()
}

/// Finishes both reservations after [`try_reserve`]. A grant of one budget that the other
/// refuses is given back, so a refused call holds nothing.
pub async fn reserve_after(
    conn: &mut AsyncPgConnection,
    ask: &ReserveAsk,
    first: FirstTry,
) -> diesel::QueryResult<Reserve> {
    let tokens = reserve_tokens_after(conn, ask, first.tokens).await?;
    let money = match (&tokens, first.money) {
        // Refused anyway: no second try for money.
        (Reserve::Granted(_), money) => budget_money::reserve_after(conn, ask, money).await?,
        (_, Attempt::Granted(m)) => {
            budget_money::settle(conn, &m, Decimal::ZERO).await?;
            Ok(None)
        }
        (_, _) => Ok(None),
    };
    Ok(match (tokens, money) {
        (Reserve::Granted(mut hold), Ok(money)) => {
            hold.money = money;
            Reserve::Granted(hold)
        }
        (Reserve::Granted(hold), Err(refusal)) => {
            if hold.is_limited() {
                settle_tokens(conn, &hold, 0).await?;
            }
            Reserve::Money(refusal)
        }
        (refused, _) => refused,
    })
}

/// Charges a call's real usage to both budgets: at most its holds, which are released.
/// Returns the tokens charged. Pipelinable like [`try_reserve`].
pub fn settle(
    conn: &mut AsyncPgConnection,
    hold: &Hold,
    spend: Spend,
) -> BoxFuture<'static, diesel::QueryResult<i64>> {
    let tokens = settle_tokens(conn, hold, spend.tokens);
    match &hold.money {
        None => tokens,
        Some(money) => future::try_join(tokens, budget_money::settle(conn, money, spend.cost))
            .map(|r| r.map(|(charged, ())| charged))
            .boxed(),
    }
}

/// Adds [`settle`]'s work to `statement` (one statement fewer). `Err` gives the statement back
/// when the hold has money: its two periods settle with [`settle`], in their own statements.
pub fn settle_within(
    statement: Joined,
    hold: &Hold,
    spend: Spend,
    guard: Guard,
) -> Result<Joined, Joined> {
    match hold.money {
        None => Ok(settle_tokens_within(statement, hold, spend.tokens, guard)),
        Some(_) => Err(statement),
    }
}

/// Frees holds whose time ran out (their process died), and turns' holds whose turn no
/// longer holds its conversation (it ended, or was taken over, without settling them: its
/// end could not be stored). A turn's claim and its holds are written and released in the
/// same transactions, so a live turn's hold is never taken. The hold names its
/// conversation, read by its key; a hold that names none (an older build's) waits for its
/// expiry. Returns how many tokens it freed.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> diesel::QueryResult<i64> {
    // Raw SQL: DELETE … RETURNING in a CTE feeding an UPDATE.
    let freed: Vec<Granted> = sql(
        "WITH gone AS (DELETE FROM budget_holds h WHERE h.expires_at < $1 \
                         OR (h.conversation_id IS NOT NULL AND NOT EXISTS \
                             (SELECT 1 FROM conversations c \
                               WHERE c.id = h.conversation_id AND c.active_turn_id = h.turn_id)) \
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
    let money = match &limit.money {
        Some(m) => Some(budget_money::status(conn, user_id, limit.period, m, now).await?),
        None => None,
    };
    Ok(Status {
        money,
        limit: limit.tokens,
        used: t.as_ref().map_or(0, |t| t.spent),
        reserved: t.map_or(0, |t| t.reserved),
        period: limit.period,
        resets_at: limit.period.resets_at(now),
    })
}

pub(super) fn period_name(p: Period) -> &'static str {
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
