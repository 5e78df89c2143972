//! Token budgets: the period a budget counts over and when it resets.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::Serialize;

/// How long a budget lasts before it starts again (UTC boundaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Day,
    Week,
    Month,
    Total,
}

impl Period {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "day" => Some(Self::Day),
            "week" => Some(Self::Week),
            "month" => Some(Self::Month),
            "total" => Some(Self::Total),
            _ => None,
        }
    }

    /// Start of the period containing `now`.
    pub fn start(self, now: DateTime<Utc>) -> DateTime<Utc> {
        let date = now.date_naive();
        let day = match self {
            Self::Day => date,
            Self::Week => date - Duration::days(i64::from(date.weekday().num_days_from_monday())),
            Self::Month => date.with_day(1).unwrap_or(date),
            // One period since the epoch; Postgres cannot store chrono's minimum date.
            Self::Total => NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or(date),
        };
        Utc.from_utc_datetime(&day.and_time(chrono::NaiveTime::MIN))
    }

    /// When the period containing `now` ends; `None` for `total`.
    pub fn resets_at(self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = self.start(now);
        match self {
            Self::Day => Some(start + Duration::days(1)),
            Self::Week => Some(start + Duration::days(7)),
            Self::Month => start.checked_add_months(chrono::Months::new(1)),
            Self::Total => None,
        }
    }
}

/// Where "now" comes from: the system clock in production, a fixed or movable one in tests
/// (period rollover is tested without sleeping).
pub type Clock = std::sync::Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The real clock.
pub fn system_clock() -> Clock {
    std::sync::Arc::new(Utc::now)
}

/// Smallest output worth calling the model for; with less left the call is refused.
pub const MIN_USEFUL_OUTPUT: i64 = 64;

/// Our token count and the provider's differ (tokenizers, hidden formatting): reserve for
/// the input with a margin.
pub fn with_margin(estimate: u64) -> i64 {
    let e = i64::try_from(estimate).unwrap_or(i64::MAX / 2);
    e.saturating_add(e / 10).saturating_add(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_utc() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 19, 30, 0).unwrap(); // a Sunday
        assert_eq!(
            Period::Day.resets_at(now).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()
        );
        assert_eq!(
            Period::Week.start(now),
            Utc.with_ymd_and_hms(2026, 11, 23, 0, 0, 0).unwrap()
        );
        assert_eq!(
            Period::Month.resets_at(now).unwrap(),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
        );
        assert_eq!(Period::Total.resets_at(now), None);
    }
}
