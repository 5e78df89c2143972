//! `current_time`: the current date and time in a given IANA time zone.

use std::str::FromStr;

use async_trait::async_trait;
use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::tools::{args_schema, parse_args, truncate_chars, Tool, ToolContext, ToolError};

/// Arguments of `current_time`.
///
/// Unknown fields are rejected (so a misspelt `time_zone` is reported
/// instead of silently answering in UTC).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurrentTimeArgs {
    /// IANA time zone name, e.g. "Europe/Paris" or "America/New_York". Defaults to "UTC".
    #[schemars(length(max = 64))]
    pub timezone: Option<String>,
}

/// Reports the current time. The clock is injectable for tests.
#[derive(Debug, Clone, Copy)]
pub struct CurrentTime {
    now: fn() -> DateTime<Utc>,
}

impl Default for CurrentTime {
    fn default() -> Self {
        Self::new()
    }
}

impl CurrentTime {
    /// Uses the system clock.
    pub fn new() -> Self {
        Self { now: Utc::now }
    }

    /// Uses `now` as the clock (for tests).
    pub fn with_clock(now: fn() -> DateTime<Utc>) -> Self {
        Self { now }
    }
}

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &str {
        "current_time"
    }

    fn description(&self) -> &str {
        "Get the current date and time, optionally in a given IANA time zone \
         (default UTC). Returns ISO 8601 time, Unix timestamp and weekday."
    }

    fn parameters(&self) -> Value {
        args_schema::<CurrentTimeArgs>()
    }

    async fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: CurrentTimeArgs = parse_args(args)?;
        let zone_name = args
            .timezone
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("UTC");
        let tz = Tz::from_str(zone_name).map_err(|_| {
            ToolError::InvalidArguments(format!(
                "timezone: unknown IANA time zone '{}'",
                truncate_chars(zone_name, 64)
            ))
        })?;
        let local = (self.now)().with_timezone(&tz);
        Ok(json!({
            "iso8601": local.to_rfc3339_opts(SecondsFormat::Secs, true),
            "timezone": tz.name(),
            "unix": local.timestamp(),
            "weekday": weekday_name(local.weekday()),
        }))
    }
}

fn weekday_name(day: chrono::Weekday) -> &'static str {
    match day {
        chrono::Weekday::Mon => "Monday",
        chrono::Weekday::Tue => "Tuesday",
        chrono::Weekday::Wed => "Wednesday",
        chrono::Weekday::Thu => "Thursday",
        chrono::Weekday::Fri => "Friday",
        chrono::Weekday::Sat => "Saturday",
        chrono::Weekday::Sun => "Sunday",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use chrono::TimeZone;
    use std::sync::Arc;

    /// 2024-03-31 00:30:00 UTC, a Sunday; Paris switches to CEST at 01:00 UTC.
    fn fixed() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 3, 31, 0, 30, 0).unwrap()
    }

    fn ctx() -> ToolContext {
        ToolContext {
            user_id: uuid::Uuid::nil(),
            username: "t".into(),
            conversation_id: uuid::Uuid::nil(),
        }
    }

    async fn call(args: Value) -> Result<Value, ToolError> {
        CurrentTime::with_clock(fixed).call(&ctx(), args).await
    }

    #[tokio::test]
    async fn default_is_utc() {
        let v = call(json!({})).await.unwrap();
        assert_eq!(
            v,
            json!({"iso8601": "2024-03-31T00:30:00Z", "timezone": "UTC",
                   "unix": 1_711_845_000, "weekday": "Sunday"})
        );
        assert_eq!(call(json!({"timezone": null})).await.unwrap(), v);
        assert_eq!(call(json!({"timezone": "  "})).await.unwrap(), v);
    }

    #[tokio::test]
    async fn named_zone() {
        let v = call(json!({"timezone": "Europe/Paris"})).await.unwrap();
        assert_eq!(v["iso8601"], "2024-03-31T01:30:00+01:00");
        assert_eq!(v["timezone"], "Europe/Paris");
        assert_eq!(v["unix"], 1_711_845_000);
        let v = call(json!({"timezone": "Pacific/Kiritimati"}))
            .await
            .unwrap();
        assert_eq!(v["iso8601"], "2024-03-31T14:30:00+14:00");
        let v = call(json!({"timezone": "America/Los_Angeles"}))
            .await
            .unwrap();
        assert_eq!(v["weekday"], "Saturday");
    }

    #[tokio::test]
    async fn unknown_zone() {
        for bad in [
            "Mars/Olympus",
            "europe/paris",
            "'; DROP TABLE users; --",
            "Ünïcödé/Zone",
        ] {
            let err = call(json!({ "timezone": bad })).await.unwrap_err();
            assert_eq!(
                err,
                ToolError::InvalidArguments(format!("timezone: unknown IANA time zone '{bad}'"))
            );
        }
    }

    #[tokio::test]
    async fn via_registry_validation() {
        let mut r = Registry::new();
        r.register(Arc::new(CurrentTime::with_clock(fixed)))
            .unwrap();
        let c = r
            .execute(&ctx(), "current_time", r#"{"timezone": 5}"#)
            .await;
        let msg = c.output.error.unwrap();
        assert!(msg.starts_with("invalid arguments: timezone: "), "{msg}");
        let c = r
            .execute(&ctx(), "current_time", r#"{"time_zone": "UTC"}"#)
            .await;
        assert_eq!(
            c.output.error.as_deref(),
            Some("invalid arguments: time_zone: unknown field (not allowed)")
        );
        let long = "A".repeat(500);
        let c = r
            .execute(
                &ctx(),
                "current_time",
                &json!({ "timezone": long }).to_string(),
            )
            .await;
        assert_eq!(c.error_code, Some("invalid_arguments"));
        let c = r.execute(&ctx(), "current_time", "").await;
        assert!(c.output.success);
    }

    #[test]
    fn real_clock_is_sane() {
        let before = Utc::now();
        let now = (CurrentTime::new().now)();
        assert!(now >= before);
    }
}
