//! A scenario: the closed-model concurrency sweep that finds saturation (TTFT p99 within the
//! bound), then the open model at half of it (or at `--open-rate`).

use std::sync::Arc;

use serde::Serialize;

use super::models::{closed, open};
use super::{log, Ctx, Phase};
use crate::fake::Directive;
use crate::scenarios::Route;

#[derive(Debug, Clone, Default, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub sweep: Vec<Phase>,
    pub saturation_per_s: Option<f64>,
    pub saturation_level: Option<usize>,
    pub max_throughput_per_s: f64,
    pub bound_note: String,
    pub half: Option<Phase>,
}

pub(super) async fn scenario(
    ctx: &Arc<Ctx>,
    name: &str,
    route: Route,
    d: Directive,
) -> ScenarioResult {
    let mut r = ScenarioResult {
        name: name.into(),
        ..Default::default()
    };
    for &c in &ctx.cfg.levels {
        log(format!(
            "{name}: closed model, concurrency {c}, {} s",
            ctx.cfg.step_secs
        ));
        let p = closed(ctx, name, route, d, c, ctx.cfg.step_secs).await;
        log(format!(
            "  {:.0} turns/s ok={} errors={:?} ttft p50={} p99={} ms, server cpu {} ms/turn",
            p.throughput_per_s,
            p.ok,
            p.errors,
            crate::stats::f(p.ttft.p50_ms, 1),
            crate::stats::f(p.ttft.p99_ms, 1),
            crate::stats::f(p.server_cpu_ms_per_turn, 2)
        ));
        r.max_throughput_per_s = r.max_throughput_per_s.max(p.throughput_per_s);
        let within = p.ttft.p99_ms.is_some_and(|x| x <= ctx.cfg.p99_bound_ms)
            && p.errors.values().sum::<u64>() as f64 <= 0.01 * p.turns.max(1) as f64;
        if within && p.throughput_per_s > r.saturation_per_s.unwrap_or(0.0) {
            r.saturation_per_s = Some(p.throughput_per_s);
            r.saturation_level = Some(c);
        }
        r.sweep.push(p);
    }
    r.bound_note = format!(
        "saturation = best closed-model throughput whose TTFT p99 ≤ {} ms and errors ≤ 1 %",
        ctx.cfg.p99_bound_ms
    );
    let sat = match r.saturation_per_s {
        Some(s) => s,
        None => {
            r.bound_note
                .push_str("; NO level met the bound, half-load uses half the best throughput");
            r.max_throughput_per_s
        }
    };
    if r.saturation_level == ctx.cfg.levels.iter().max().copied() {
        r.bound_note.push_str(
            "; the highest concurrency level was still within the bound (may be under-estimated)",
        );
    }
    let (half, why) = match ctx.cfg.open_rate {
        Some(r) => (r, "fixed by --open-rate"),
        None => ((sat / 2.0).max(1.0), "half of saturation"),
    };
    log(format!(
        "{name}: open model at {half:.0}/s ({why}), {} s",
        ctx.cfg.open_secs
    ));
    let p = open(ctx, name, route, d, half, ctx.cfg.open_secs, true).await;
    log(format!(
        "  ok={} errors={:?} added ttft p50={} p99={} ms, added gap p99={} ms, commits/turn={}",
        p.ok,
        p.errors,
        crate::stats::f(p.added_ttft_p50_ms, 2),
        crate::stats::f(p.added_ttft_p99_ms, 2),
        crate::stats::f(p.added_gap_p99_ms, 2),
        crate::stats::f(p.xact_commits_per_turn, 2)
    ));
    r.half = Some(p);
    r
}
