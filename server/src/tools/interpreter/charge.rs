//! Paying for sandbox CPU from the user's money budget (DESIGN §15): before the run, hold
//! the price of its whole CPU limit; after it, charge the measured CPU at the price, at most
//! the hold (so the budget is never overshot), and give back the rest.

use std::time::Duration;

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::db::models::budget;
use crate::db::models::budget_cpu::{self, AmountAsk, AmountHold};
use crate::db::models::budget_money::{self, MoneyHold};
use crate::db::Pool;
use crate::tools::ToolError;

/// Milliseconds in an hour: the price is per CPU-hour.
const MS_PER_HOUR: i64 = 3_600_000;

/// The price of sandbox CPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPrice {
    pub per_hour: Decimal,
    pub currency: String,
}

impl CpuPrice {
    /// `cpu_ms × price / 3,600,000`, exact (no rounding up).
    pub fn cost(&self, cpu: Duration) -> Decimal {
        let ms = i64::try_from(cpu.as_millis()).unwrap_or(i64::MAX);
        Decimal::from(ms) * self.per_hour / Decimal::from(MS_PER_HOUR)
    }
}

/// A hold taken for one run (none when the user has no money budget).
pub struct Held {
    pub hold: Option<MoneyHold>,
}

/// Holds the price of `cpu` for `user`, or the tool error saying why the budget cannot.
pub async fn hold(
    pool: &Pool,
    price: &CpuPrice,
    user: Uuid,
    cpu: Duration,
    process_id: Uuid,
    ttl: Duration,
) -> Result<Held, ToolError> {
    let unavailable = || ToolError::Failed("the budget cannot be checked right now".into());
    let mut conn = pool.get().await.map_err(|_| unavailable())?;
    let limit = budget::limit_for(&mut conn, user)
        .await
        .map_err(|_| unavailable())?;
    let now = chrono::Utc::now();
    let want = price.cost(cpu);
    let ask = AmountAsk {
        user_id: user,
        period: limit.period,
        money: limit.money,
        currency: price.currency.clone(),
        amount: want,
        now,
        expires_at: now + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(1)),
        process_id,
    };
    match budget_cpu::reserve_amount(&mut conn, &ask)
        .await
        .map_err(|_| unavailable())?
    {
        AmountHold::Unlimited => Ok(Held { hold: None }),
        AmountHold::Granted(hold) => Ok(Held { hold: Some(hold) }),
        AmountHold::OtherCurrency(limit) => Err(ToolError::NotPermitted(format!(
            "code runs are priced in {}, your money budget is in {}; ask an admin",
            price.currency, limit.currency
        ))),
        AmountHold::Refused {
            left,
            limit,
            resets_at,
        } => Err(ToolError::NotPermitted(format!(
            "your money budget has {} {} left; a run of up to {} CPU-seconds needs {} {}{}",
            left.normalize(),
            limit.currency,
            cpu.as_secs(),
            want.normalize(),
            limit.currency,
            resets_at.map_or(String::new(), |t| format!(
                " (it resets at {})",
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ))
        ))),
    }
}

/// Charges `cost` (at most the hold) and frees the hold. Best effort on a database error:
/// the hold then expires and the sweeper frees it, uncharged.
pub async fn settle(pool: &Pool, held: &Held, cost: Decimal) {
    let Some(hold) = &held.hold else { return };
    match pool.get().await {
        Ok(mut conn) => {
            if let Err(e) = budget_money::settle(&mut conn, hold, cost).await {
                tracing::warn!(error = %e, "a sandbox run's charge could not be settled");
            }
        }
        Err(e) => tracing::warn!(error = %e, "a sandbox run's charge could not be settled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_cpu_ms_times_the_hourly_price_exactly() {
        let p = CpuPrice {
            per_hour: "3.6".parse().unwrap(),
            currency: "USD".into(),
        };
        assert_eq!(
            p.cost(Duration::from_millis(1234)),
            "0.001234".parse().unwrap()
        );
        assert_eq!(p.cost(Duration::ZERO), Decimal::ZERO);
        let q = CpuPrice {
            per_hour: "0.09".parse().unwrap(),
            currency: "EUR".into(),
        };
        assert_eq!(q.cost(Duration::from_secs(3600)), "0.09".parse().unwrap());
        assert_eq!(q.cost(Duration::from_secs(40)), "0.001".parse().unwrap());
    }
}
