//! Token budgets: the period a budget counts over and when it resets.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::Serialize;

/// How long a budget lasts before it starts again (UTC boundaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
            Self::Total => NaiveDate::MIN,
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
