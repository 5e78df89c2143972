//! The load models: closed (fixed concurrency, turns back to back) and open (arrivals at a
//! fixed rate), and the unreported warm-up run before the measured phases.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::calibrate;
use super::measure::{finish_phase, sample, spawn_direct};
use super::{log, Ctx, Phase};
use crate::client::Outcome;
use crate::fake::Directive;
use crate::scenarios::Route;
use crate::sys;

/// Closed model: `conc` workers, each running turns back to back for `secs`.
pub(super) async fn closed(
    ctx: &Arc<Ctx>,
    scenario: &str,
    route: Route,
    d: Directive,
    conc: usize,
    secs: f64,
) -> Phase {
    let calls0 = upstream_calls(ctx, route).await;
    let mark0 = calibrate::mark(ctx).await;
    let before = sample(ctx, false);
    let deadline = before.at + Duration::from_secs_f64(secs);
    let direct = spawn_direct(ctx, route, d, ctx.cfg.direct_rate, deadline);
    let mcp = match d.mcp {
        true => crate::scenarios::McpWatch::start(ctx, deadline).await,
        false => None,
    };
    let content = format!("hello {}", d.render());
    let mut workers = Vec::new();
    for _ in 0..conc {
        let ctx = ctx.clone();
        let content = content.clone();
        workers.push(tokio::spawn(async move {
            let mut outs = Vec::new();
            while Instant::now() < deadline {
                let Some(conv) = ctx.take_for(route) else {
                    outs.push(Outcome {
                        error: Some("no_free_conversation".into()),
                        ..Default::default()
                    });
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let t0 = Instant::now();
                let o = ctx
                    .run_turn(route, &conv, &content, t0, ctx.turn_timeout(), None)
                    .await;
                Ctx::give(ctx.pool_for(route), conv);
                let failed = !o.ok;
                outs.push(o);
                if failed {
                    // Do not spin on a failing server.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            outs
        }));
    }
    let mut outs = Vec::new();
    for w in workers {
        if let Ok(v) = w.await {
            outs.extend(v);
        }
    }
    let direct = direct.await.unwrap_or_default();
    let after = sample(ctx, false);
    let mark1 = calibrate::mark(ctx).await;
    let mcp = match mcp {
        Some(w) => Some(w.finish(ctx, &outs).await),
        None => None,
    };
    let p = Phase {
        scenario: scenario.into(),
        model: "closed".into(),
        concurrency: Some(conc),
        mcp,
        upstream_calls: upstream_calls_since(ctx, calls0).await,
        ..Default::default()
    };
    let mut p = finish_phase(ctx, p, &outs, &direct, &before, &after, deadline);
    calibrate::apply(&mut p, mark0, mark1);
    p
}

/// Open model: arrivals at a constant `rate` for `secs`; latency counts from the scheduled
/// arrival, so queueing in the generator or server is not hidden.
pub(super) async fn open(
    ctx: &Arc<Ctx>,
    scenario: &str,
    route: Route,
    d: Directive,
    rate: f64,
    secs: f64,
    pg_counters: bool,
) -> Phase {
    if pg_counters && ctx.cfg.stats_wait_secs > 0 {
        log(format!(
            "  waiting {} s for Postgres stats to flush",
            ctx.cfg.stats_wait_secs
        ));
        tokio::time::sleep(Duration::from_secs(ctx.cfg.stats_wait_secs)).await;
    }
    let calls0 = upstream_calls(ctx, route).await;
    let mark0 = calibrate::mark(ctx).await;
    let before = sample(ctx, pg_counters);
    let deadline = before.at + Duration::from_secs_f64(secs);
    let direct = spawn_direct(ctx, route, d, ctx.cfg.direct_rate, deadline);
    let mcp = match d.mcp {
        true => crate::scenarios::McpWatch::start(ctx, deadline).await,
        false => None,
    };
    let content = format!("hello {}", d.render());
    let rate = rate.max(0.5);
    let step = Duration::from_secs_f64(1.0 / rate);
    let mut handles = Vec::new();
    let mut dropped = Vec::new();
    for i in 0..1_000_000u32 {
        let at = before.at + step * i;
        if at >= deadline {
            break;
        }
        tokio::time::sleep_until(at).await;
        let Some(conv) = ctx.take_for(route) else {
            dropped.push(Outcome {
                error: Some("no_free_conversation".into()),
                ..Default::default()
            });
            continue;
        };
        let ctx2 = ctx.clone();
        let content = content.clone();
        handles.push(tokio::spawn(async move {
            let o = ctx2
                .run_turn(route, &conv, &content, at, ctx2.turn_timeout(), None)
                .await;
            Ctx::give(ctx2.pool_for(route), conv);
            o
        }));
    }
    let mut outs = dropped;
    for h in handles {
        if let Ok(o) = h.await {
            outs.push(o);
        }
    }
    let direct = direct.await.unwrap_or_default();
    // CPU and duration over the working window; Postgres counters after the flush wait.
    let mut after = sample(ctx, false);
    let mark1 = calibrate::mark(ctx).await;
    if pg_counters {
        if ctx.cfg.stats_wait_secs > 0 {
            tokio::time::sleep(Duration::from_secs(ctx.cfg.stats_wait_secs)).await;
        }
        after.xact = sys::xact_commit(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db);
        after.xid = sys::next_xid(&ctx.cfg.pg_host, &ctx.cfg.pg_port);
    }
    let mcp = match mcp {
        Some(w) => Some(w.finish(ctx, &outs).await),
        None => None,
    };
    let p = Phase {
        scenario: scenario.into(),
        model: "open".into(),
        rate_per_s: Some(rate),
        mcp,
        upstream_calls: upstream_calls_since(ctx, calls0).await,
        ..Default::default()
    };
    let mut p = finish_phase(ctx, p, &outs, &direct, &before, &after, deadline);
    p.turns = outs
        .iter()
        .filter(|o| o.error.as_deref() != Some("no_free_conversation"))
        .count();
    calibrate::apply(&mut p, mark0, mark1);
    p
}

/// The catalogue scenario's model calls at each fake upstream so far (`None` for others).
async fn upstream_calls(ctx: &Ctx, route: Route) -> Option<BTreeMap<String, u64>> {
    match route {
        Route::Catalogue => Some(crate::catalogue::upstream_calls(ctx).await),
        Route::Native | Route::V1 | Route::Image => None,
    }
}

async fn upstream_calls_since(
    ctx: &Ctx,
    before: Option<BTreeMap<String, u64>>,
) -> Option<BTreeMap<String, u64>> {
    let before = before?;
    let after = crate::catalogue::upstream_calls(ctx).await;
    Some(crate::catalogue::calls_since(&before, &after))
}

/// Warms up (connection pools, caches), not reported. The held run's demo model answers
/// one word a delay: no warm-up there. The catalogue's conversations warm up too when that
/// scenario runs (its providers have connection pools of their own).
pub(super) async fn warm_up(ctx: &Arc<Ctx>) {
    let mut warm_routes: Vec<Route> = match (ctx.cfg.held == 0, ctx.cfg.catalogue()) {
        (false, _) => vec![],
        (true, false) => vec![Route::Native, Route::V1],
        (true, true) => vec![Route::Native, Route::V1, Route::Catalogue],
    };
    if ctx.cfg.images() {
        warm_routes.push(Route::Image);
    }
    if !warm_routes.is_empty() {
        log("warm-up");
    }
    for route in warm_routes {
        let _ = closed(
            ctx,
            "warmup",
            route,
            ctx.plain(),
            8,
            if ctx.cfg.smoke { 1.0 } else { 3.0 },
        )
        .await;
    }
}
