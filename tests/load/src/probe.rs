//! What the server says about itself while under load: its Prometheus gauges (pool
//! connections in use, waiting for the pool, database up, open streams) and `/readyz`.
//! The burst, the held streams and the soak sample these beside RSS and descriptors, so
//! "the pool stayed healthy" and "no live objects piled up" are measured, not assumed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::Ctx;

/// One scrape of `/metrics`: every metric summed over its label sets, and how many series
/// (label sets) there are — a label set per request path or user would grow without end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scrape {
    pub series: usize,
    pub sums: BTreeMap<String, f64>,
}

impl Scrape {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.sums.get(name).copied()
    }
}

/// Parses the Prometheus text format (enough of it: `name{labels} value` lines).
pub fn parse(text: &str) -> Scrape {
    let mut s = Scrape::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        s.series += 1;
        let name = &line[..name_end];
        *s.sums.entry(name.to_owned()).or_insert(0.0) += value;
        if line.contains("state=\"in_use\"") {
            *s.sums.entry(format!("{name}:in_use")).or_insert(0.0) += value;
        }
    }
    s
}

pub async fn scrape(ctx: &Ctx) -> Option<Scrape> {
    let text = ctx
        .direct_http
        .get(format!("{}/metrics", ctx.api.base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    Some(parse(&text))
}

/// Health seen from outside while a phase runs: `/readyz` answers and the pool's gauges.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Health {
    pub readyz_probes: u64,
    /// `/readyz` answered non-2xx or not within 5 s.
    pub readyz_failures: u64,
    pub readyz_max_ms: Option<f64>,
    /// Highest `agentchat_db_pool_waiting` (all shards) and connections in use seen.
    pub pool_waiting_max: Option<f64>,
    pub pool_in_use_max: Option<f64>,
    pub pool_max_connections: Option<f64>,
    /// Lowest `agentchat_db_up` seen (1 = up throughout).
    pub db_up_min: Option<f64>,
    pub active_streams_max: Option<f64>,
    /// Highest `agentchat_turn_starts_waiting`: turn starts queued for a connection.
    pub starts_waiting_max: Option<f64>,
}

fn max(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn min(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl Health {
    /// One probe: `/readyz` and a scrape.
    pub async fn probe(&mut self, ctx: &Ctx) {
        let t0 = Instant::now();
        let ok = ctx
            .direct_http
            .get(format!("{}/readyz", ctx.api.base))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map(|r| r.status().is_success())
            .unwrap_or(false);
        self.readyz_probes += 1;
        if !ok {
            self.readyz_failures += 1;
        }
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        self.readyz_max_ms = max(self.readyz_max_ms, Some(ms));
        if let Some(s) = scrape(ctx).await {
            self.pool_waiting_max = max(self.pool_waiting_max, s.get("agentchat_db_pool_waiting"));
            self.pool_in_use_max = max(
                self.pool_in_use_max,
                s.get("agentchat_db_pool_connections:in_use"),
            );
            self.pool_max_connections = s
                .get("agentchat_db_pool_max_connections")
                .or(self.pool_max_connections);
            self.db_up_min = min(self.db_up_min, s.get("agentchat_db_up"));
            self.active_streams_max =
                max(self.active_streams_max, s.get("agentchat_active_streams"));
            self.starts_waiting_max = max(
                self.starts_waiting_max,
                s.get("agentchat_turn_starts_waiting"),
            );
        }
    }

    /// Healthy: `/readyz` always answered 2xx and the database stayed up.
    pub fn healthy(&self) -> bool {
        self.readyz_probes > 0
            && self.readyz_failures == 0
            && self.db_up_min.is_none_or(|u| u >= 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_over_label_sets_and_counts_series() {
        let s = parse(
            "# HELP x y\n# TYPE agentchat_db_pool_waiting gauge\n\
             agentchat_db_pool_waiting{shard=\"0\"} 3\nagentchat_db_pool_waiting{shard=\"1\"} 4\n\
             agentchat_db_up 1\n\nbad line here\n\
             agentchat_db_pool_connections{shard=\"0\",state=\"in_use\"} 2\n\
             agentchat_db_pool_connections{shard=\"0\",state=\"idle\"} 5\n",
        );
        assert_eq!(s.get("agentchat_db_pool_connections"), Some(7.0));
        assert_eq!(s.get("agentchat_db_pool_connections:in_use"), Some(2.0));
        assert_eq!(s.get("agentchat_db_pool_waiting"), Some(7.0));
        assert_eq!(s.get("agentchat_db_up"), Some(1.0));
        assert_eq!(s.series, 5);
    }
}
