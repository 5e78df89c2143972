//! The run beside a stored one: server and Postgres CPU per turn, saturation and added TTFT
//! of each scenario, now and in the stored result (by default the `RESULTS.json` this run is
//! about to replace, i.e. the previous release's), with their ratio. Two waves that each
//! looked "within noise" added up to a third of the throughput; a before/after should be
//! one command that shows the drift.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use crate::bench::Report;
use crate::stats::f;

/// What is compared, per scenario: label, the path to it in a scenario's report (its first
/// key `half`, the half-load phase, or `top`, the closed phase at the highest concurrency),
/// and whether lower is better (`None`: neither, the machine's speed).
type Metric = (&'static str, &'static [&'static str], Option<bool>);

const METRICS: [Metric; 11] = [
    (
        "the machine: fake upstream CPU µs/call (half load)",
        &["half", "upstream_cpu_us_per_call"],
        None,
    ),
    (
        "server CPU ms/turn (half load)",
        &["half", "server_cpu_ms_per_turn"],
        Some(true),
    ),
    (
        "server CPU in upstream calls (half load)",
        &["half", "server_cpu_in_calls"],
        Some(true),
    ),
    (
        "PG backends CPU ms/turn (half load)",
        &["half", "pg_backend_cpu_ms_per_turn"],
        Some(true),
    ),
    (
        "PG backends CPU in upstream calls (half load)",
        &["half", "pg_backend_cpu_in_calls"],
        Some(true),
    ),
    (
        "the machine: fake upstream CPU µs/call (top level)",
        &["top", "upstream_cpu_us_per_call"],
        None,
    ),
    (
        "server CPU in upstream calls (top level)",
        &["top", "server_cpu_in_calls"],
        Some(true),
    ),
    (
        "PG backends CPU in upstream calls (top level)",
        &["top", "pg_backend_cpu_in_calls"],
        Some(true),
    ),
    (
        "added TTFT p50 ms (half load)",
        &["half", "added_ttft_p50_ms"],
        Some(true),
    ),
    (
        "added TTFT p99 ms (half load)",
        &["half", "added_ttft_p99_ms"],
        Some(true),
    ),
    ("saturation turns/s", &["saturation_per_s"], Some(false)),
];

/// The figure at `path` in a scenario's report, now's or a stored one's.
fn figure(scenario: &Value, path: &[&str]) -> Option<f64> {
    match path.split_first() {
        Some((&"top", rest)) => at(top(scenario)?, rest),
        _ => at(scenario, path),
    }
    .and_then(Value::as_f64)
}

/// The closed phase at the highest concurrency: where a build's CPU per turn reads steadiest
/// in upstream calls (its rate is the build's own, so the fake upstream batches alike).
fn top(scenario: &Value) -> Option<&Value> {
    scenario
        .get("sweep")?
        .as_array()?
        .iter()
        .filter(|p| p.get("model").and_then(Value::as_str) == Some("closed"))
        .max_by_key(|p| p.get("concurrency").and_then(Value::as_u64).unwrap_or(0))
}

/// The stored result at `path`, if it can be read as a report.
pub fn load(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("scenarios")?.as_array()?;
    Some(v)
}

fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// The section, when the run's configuration names a stored result that can be read.
pub fn markdown(r: &Report, s: &mut String) {
    let Some(cfg) = r.config.as_ref() else { return };
    let Some(path) = cfg.compare_with() else {
        return;
    };
    let Some(stored) = load(&path) else {
        let _ = writeln!(
            s,
            "## Against the stored result\n\n`{}` could not be read as a report: nothing to compare.\n",
            path.display()
        );
        return;
    };
    let when = stored
        .get("started_at_unix")
        .and_then(Value::as_i64)
        .map_or("–".into(), utc_date);
    let bin = at(&stored, &["machine", "server_bin"])
        .and_then(Value::as_str)
        .unwrap_or("–");
    let shape = |v: &Value| {
        ["ttft_ms", "deltas", "gap_ms", "users", "levels"]
            .iter()
            .map(|k| at(v, &["config", k]).map_or("–".into(), Value::to_string))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let now_shape = format!(
        "{} / {} / {} / {} / {}",
        cfg.ttft_ms,
        cfg.deltas,
        cfg.gap_ms,
        cfg.users,
        serde_json::to_string(&cfg.levels).unwrap_or_default()
    );
    let stored_shape = shape(&stored);
    let _ = writeln!(
        s,
        "## Against the stored result\n\n`{}`: run at {when}, server binary `{bin}`. Ratio = now ÷ stored; **worse** marks a change of more than 10 % in the wrong direction (a single pair of runs: confirm a drift by alternating the two builds in one sitting). The rows \"in upstream calls\" divide by the machine's speed in each run (its first row), so they hold across sittings and hosts better than the times. Shape (upstream first token ms / deltas / gap ms / users / concurrency levels): stored {stored_shape}, now {now_shape}{}.\n",
        path.display(),
        if stored_shape == now_shape { "" } else { " — **different shapes: the numbers are not comparable**" }
    );
    let _ = writeln!(s, "| scenario | measure | stored | now | ratio |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    let scenarios = stored["scenarios"].as_array().cloned().unwrap_or_default();
    for sc in &r.scenarios {
        let Some(old) = scenarios.iter().find(|o| o["name"] == sc.name.as_str()) else {
            let _ = writeln!(s, "| {} | (not in the stored result) | | | |", sc.name);
            continue;
        };
        let measured = serde_json::to_value(sc).unwrap_or_default();
        for (label, path, lower_is_better) in METRICS {
            let (now, then) = (figure(&measured, path), figure(old, path));
            let _ = writeln!(
                s,
                "| {} | {label} | {} | {} | {} |",
                sc.name,
                f(then, 2),
                f(now, 2),
                ratio(now, then, lower_is_better)
            );
        }
    }
    s.push('\n');
}

/// A Unix time as `YYYY-MM-DD HH:MM UTC` (days to a civil date: Howard Hinnant's algorithm).
fn utc_date(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// `now ÷ then`, marked when it moved more than 10 % the wrong way.
fn ratio(now: Option<f64>, then: Option<f64>, lower_is_better: Option<bool>) -> String {
    match (now, then) {
        (Some(n), Some(t)) if t > 0.0 => {
            let q = n / t;
            let worse = match lower_is_better {
                Some(true) => q > 1.1,
                Some(false) => q < 1.0 / 1.1,
                None => false,
            };
            format!("{q:.2}{}", if worse { " **worse**" } else { "" })
        }
        _ => "–".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_read_as_dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(1_796_237_675), "2026-12-02 18:54 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn ratios_mark_drift_in_the_wrong_direction_only() {
        assert_eq!(ratio(Some(1.2), Some(1.0), Some(true)), "1.20 **worse**");
        assert_eq!(ratio(Some(0.8), Some(1.0), Some(true)), "0.80");
        assert_eq!(
            ratio(Some(300.0), Some(400.0), Some(false)),
            "0.75 **worse**"
        );
        assert_eq!(ratio(Some(420.0), Some(400.0), Some(false)), "1.05");
        assert_eq!(ratio(None, Some(1.0), Some(true)), "–");
        assert_eq!(ratio(Some(1.0), Some(0.0), Some(true)), "–");
        // The machine's speed has no better direction: a slower host is not a regression.
        assert_eq!(ratio(Some(800.0), Some(600.0), None), "1.33");
    }

    #[test]
    fn figures_are_read_from_half_load_and_from_the_highest_closed_level() {
        let scenario = serde_json::json!({
            "saturation_per_s": 500.0,
            "half": {"pg_backend_cpu_in_calls": 1.9},
            "sweep": [
                {"model": "closed", "concurrency": 128, "pg_backend_cpu_in_calls": 2.6},
                {"model": "closed", "concurrency": 1, "pg_backend_cpu_in_calls": 1.2},
                {"model": "closed", "concurrency": 64, "pg_backend_cpu_in_calls": 2.3},
            ]
        });
        assert_eq!(
            figure(&scenario, &["half", "pg_backend_cpu_in_calls"]),
            Some(1.9)
        );
        assert_eq!(
            figure(&scenario, &["top", "pg_backend_cpu_in_calls"]),
            Some(2.6)
        );
        assert_eq!(figure(&scenario, &["saturation_per_s"]), Some(500.0));
        // A stored report from before the calibration has no such figure.
        assert_eq!(figure(&scenario, &["top", "server_cpu_in_calls"]), None);
        assert_eq!(
            figure(&serde_json::json!({"sweep": []}), &["top", "x"]),
            None
        );
    }

    #[test]
    fn a_stored_report_is_read_by_path_and_others_are_not() {
        let dir = std::env::temp_dir().join(format!("compare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(
            &good,
            r#"{"scenarios":[{"name":"plain chat","saturation_per_s":400.0,"half":{"server_cpu_ms_per_turn":1.5}}]}"#,
        )
        .unwrap();
        let v = load(&good).unwrap();
        let sc = &v["scenarios"][0];
        assert_eq!(
            at(sc, &["half", "server_cpu_ms_per_turn"]).and_then(Value::as_f64),
            Some(1.5)
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"not\": \"a report\"}").unwrap();
        assert!(load(&bad).is_none());
        assert!(load(&dir.join("missing.json")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
