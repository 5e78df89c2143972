//! Measuring a phase: counters sampled around it, the direct (baseline) requests to the fake
//! upstream under the same load, and `Phase`, the numbers a phase reports.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Ctx;
use crate::client::{self, Outcome};
use crate::fake::Directive;
use crate::scenarios::Route;
use crate::stats::{count_errors, Dist};
use crate::sys;

/// Counters sampled around a phase.
pub(super) struct Sample {
    pub(super) at: Instant,
    server_ticks: u64,
    pg: sys::PgCpu,
    pub(super) xact: Option<u64>,
    pub(super) xid: Option<u64>,
}

pub(super) fn sample(ctx: &Ctx, with_pg_counters: bool) -> Sample {
    Sample {
        at: Instant::now(),
        server_ticks: sys::cpu_ticks(ctx.server_pid).unwrap_or(0),
        pg: sys::pg_cpu(&ctx.db),
        xact: with_pg_counters
            .then(|| sys::xact_commit(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db))
            .flatten(),
        xid: with_pg_counters
            .then(|| sys::next_xid(&ctx.cfg.pg_host, &ctx.cfg.pg_port))
            .flatten(),
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Phase {
    pub scenario: String,
    pub model: String,
    pub concurrency: Option<usize>,
    pub rate_per_s: Option<f64>,
    pub secs: f64,
    pub turns: usize,
    pub ok: usize,
    pub errors: BTreeMap<String, u64>,
    pub throughput_per_s: f64,
    pub ttft: Dist,
    pub gap: Dist,
    pub turn_total: Dist,
    pub direct_ttft: Dist,
    pub direct_gap: Dist,
    pub direct_errors: BTreeMap<String, u64>,
    pub added_ttft_p50_ms: Option<f64>,
    pub added_ttft_p95_ms: Option<f64>,
    pub added_ttft_p99_ms: Option<f64>,
    pub added_gap_p99_ms: Option<f64>,
    pub server_cpu_ms_per_turn: Option<f64>,
    pub server_cpu_util_pct: Option<f64>,
    pub pg_backend_cpu_ms_per_turn: Option<f64>,
    pub pg_all_cpu_ms_per_turn: Option<f64>,
    /// The fake upstream's CPU per model call in this phase: the machine's speed.
    pub upstream_cpu_us_per_call: Option<f64>,
    /// Server CPU per turn in units of [`Phase::upstream_cpu_us_per_call`].
    pub server_cpu_in_calls: Option<f64>,
    /// Postgres backends' CPU per turn in the same units.
    pub pg_backend_cpu_in_calls: Option<f64>,
    pub xact_commits_per_turn: Option<f64>,
    pub writing_xids_per_turn: Option<f64>,
    pub server_rss_mib_after: Option<f64>,
    /// MCP scenario: the MCP call through the server against the direct session.
    pub mcp: Option<crate::scenarios::McpPhase>,
    /// Catalogue scenario: model calls each fake upstream served during the phase, by the
    /// model id they named (`upstream 1: fake-a`, …; the direct baseline's name `fake`).
    pub upstream_calls: Option<BTreeMap<String, u64>>,
}

pub(super) fn finish_phase(
    ctx: &Ctx,
    mut p: Phase,
    outs: &[Outcome],
    direct: &[Outcome],
    before: &Sample,
    after: &Sample,
    window_end: Instant,
) -> Phase {
    p.turns = outs.len();
    p.ok = outs.iter().filter(|o| o.ok).count();
    p.errors = count_errors(outs.iter().map(|o| &o.error));
    p.secs = (after.at - before.at).as_secs_f64();
    let window = (window_end - before.at).as_secs_f64().max(0.001);
    p.throughput_per_s = p.ok as f64 / window;
    p.ttft = Dist::of(outs.iter().filter_map(|o| o.ttft_us).collect());
    p.gap = Dist::of(
        outs.iter()
            .flat_map(|o| o.gaps_us.iter().copied())
            .collect(),
    );
    p.turn_total = Dist::of(outs.iter().filter(|o| o.ok).map(|o| o.total_us).collect());
    p.direct_ttft = Dist::of(direct.iter().filter_map(|o| o.ttft_us).collect());
    p.direct_gap = Dist::of(
        direct
            .iter()
            .flat_map(|o| o.gaps_us.iter().copied())
            .collect(),
    );
    p.direct_errors = count_errors(direct.iter().map(|o| &o.error));
    p.added_ttft_p50_ms = crate::stats::sub(p.ttft.p50_ms, p.direct_ttft.p50_ms);
    p.added_ttft_p95_ms = crate::stats::sub(p.ttft.p95_ms, p.direct_ttft.p95_ms);
    p.added_ttft_p99_ms = crate::stats::sub(p.ttft.p99_ms, p.direct_ttft.p99_ms);
    p.added_gap_p99_ms = crate::stats::sub(p.gap.p99_ms, p.direct_gap.p99_ms);
    let n = p.turns.max(1) as f64;
    let server_ms =
        after.server_ticks.saturating_sub(before.server_ticks) as f64 * 1000.0 / sys::CLK_TCK;
    let (pg_db_ms, pg_all_ms) = after.pg.since(&before.pg);
    if p.turns > 0 {
        p.server_cpu_ms_per_turn = Some(server_ms / n);
        p.pg_backend_cpu_ms_per_turn = Some(pg_db_ms / n);
        p.pg_all_cpu_ms_per_turn = Some(pg_all_ms / n);
        if let (Some(a), Some(b)) = (after.xact, before.xact) {
            p.xact_commits_per_turn = Some(a.saturating_sub(b) as f64 / n);
        }
        if let (Some(a), Some(b)) = (after.xid, before.xid) {
            p.writing_xids_per_turn = Some(a.saturating_sub(b) as f64 / n);
        }
    }
    p.server_cpu_util_pct = Some(server_ms / 10.0 / p.secs.max(0.001));
    p.server_rss_mib_after = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
    let _ = ctx;
    p
}

/// Fires direct requests at the fake upstream at `rate`/s until `stop` (the baseline measured
/// under the same machine load as the phase); for the catalogue scenario alternately at its
/// two fake upstreams, as its turns go.
pub(super) fn spawn_direct(
    ctx: &Ctx,
    route: Route,
    d: Directive,
    rate: f64,
    until: Instant,
) -> JoinHandle<Vec<Outcome>> {
    let http = ctx.direct_http.clone();
    let bases = ctx.fake_bases_for(route);
    let image = ctx.direct_image_for(route);
    let content = format!("baseline {}", d.render());
    tokio::spawn(async move {
        let mut handles = Vec::new();
        if rate <= 0.0 {
            return Vec::new();
        }
        let start = Instant::now();
        let step = Duration::from_secs_f64(1.0 / rate);
        for i in 0..100_000u32 {
            let at = start + step * i;
            if at >= until {
                break;
            }
            tokio::time::sleep_until(at).await;
            let base = bases[i as usize % bases.len()].clone();
            let (http, content, image) = (http.clone(), content.clone(), image.clone());
            handles.push(tokio::spawn(async move {
                let image = image.as_deref().map(String::as_str);
                client::direct_turn(
                    &http,
                    &base,
                    &content,
                    d.tool,
                    image,
                    at,
                    Duration::from_secs(60),
                )
                .await
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            if let Ok(o) = h.await {
                out.push(o);
            }
        }
        out
    })
}
