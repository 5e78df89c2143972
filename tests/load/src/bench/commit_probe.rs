//! The commit probes: Postgres commits (and transaction ids) per turn before the first text
//! token and after it, for plain and tool turns, native and through `/v1`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::ctx::release;
use super::{log, upstream_active, Ctx, Report};
use crate::fake::Directive;
use crate::scenarios::Route;
use crate::sys;

#[derive(Debug, Clone, Default, Serialize)]
pub struct CommitProbe {
    /// Tool turns (one `calculator` step, then the held text) rather than plain ones.
    pub tool: bool,
    pub route: Route,
    pub turns: usize,
    pub reached_first_token: usize,
    pub completed: usize,
    pub xact_before_first_token: Option<f64>,
    pub xact_after_first_token: Option<f64>,
    /// Commits per second with no turns running (subtracted from the two above).
    pub background_commits_per_sec: f64,
    /// The same two without the subtraction.
    pub xact_raw_before_first_token: Option<f64>,
    pub xact_raw_after_first_token: Option<f64>,
    pub xid_before_first_token: Option<f64>,
    pub xid_after_first_token: Option<f64>,
    pub reliable: bool,
}

/// Commits per turn before the first token and after it, with held streams so the two halves
/// are separated in time (each read waits for Postgres to flush its counters).
/// The server's own background work also commits: the kit slows the hold sweeper (30 s by
/// default) to once a day, and the same window length with no turns is measured first and
/// subtracted for anything else. With `tool`, the first model call answers a tool call and
/// the second one holds: "before the first token" is then everything up to the first text
/// token, the tool step's commit included.
async fn commit_probe(ctx: &Arc<Ctx>, tool: bool, route: Route) -> CommitProbe {
    let k = 20usize;
    let wait = Duration::from_secs(ctx.cfg.stats_wait_secs);
    let (h, p) = (ctx.cfg.pg_host.clone(), ctx.cfg.pg_port.clone());
    tokio::time::sleep(wait).await;
    let idle_start = Instant::now();
    let cb = sys::xact_commit(&h, &p, &ctx.db);
    tokio::time::sleep(wait).await;
    let c0 = sys::xact_commit(&h, &p, &ctx.db);
    let idle_per_sec = match (cb, c0) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / idle_start.elapsed().as_secs_f64(),
        _ => 0.0,
    };
    let window1 = Instant::now();
    let x0 = sys::next_xid(&h, &p);
    let hold = Directive {
        ttft_ms: 5,
        n: 1,
        gap_ms: 60_000,
        hold_s: 300,
        tool,
        ..Default::default()
    };
    let content = format!("probe {}", hold.render());
    let opened = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..k {
        let Some(conv) = ctx.take() else { break };
        let (ctx2, content, o2) = (ctx.clone(), content.clone(), opened.clone());
        handles.push(tokio::spawn(async move {
            let o = ctx2
                .run_turn(
                    route,
                    &conv,
                    &content,
                    Instant::now(),
                    Duration::from_secs(400),
                    Some(o2),
                )
                .await;
            Ctx::give(&ctx2.pool, conv);
            o
        }));
    }
    let limit = Instant::now() + Duration::from_secs(30);
    // `opened` counts the first tool call of a tool turn: those are holding once the fake
    // upstream has as many streams open as there are turns (their second calls).
    let holding = || async {
        !tool
            || upstream_active(ctx)
                .await
                .is_some_and(|a| a >= handles.len() as u64)
    };
    while ((opened.load(Ordering::Relaxed) as usize) < handles.len() || !holding().await)
        && Instant::now() < limit
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let reached = opened.load(Ordering::Relaxed) as usize;
    tokio::time::sleep(wait).await;
    let c1 = sys::xact_commit(&h, &p, &ctx.db);
    let x1 = sys::next_xid(&h, &p);
    let window1 = window1.elapsed().as_secs_f64();
    let window2 = Instant::now();
    release(ctx).await;
    let mut completed = 0;
    for hd in handles {
        if let Ok(Ok(o)) = tokio::time::timeout(Duration::from_secs(60), hd).await {
            completed += o.ok as usize;
        }
    }
    tokio::time::sleep(wait).await;
    let c2 = sys::xact_commit(&h, &p, &ctx.db);
    let x2 = sys::next_xid(&h, &p);
    let window2 = window2.elapsed().as_secs_f64();
    let per = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / k as f64);
    let net = |a: Option<u64>, b: Option<u64>, secs: f64| {
        Some(((b?.saturating_sub(a?) as f64 - idle_per_sec * secs) / k as f64).max(0.0))
    };
    CommitProbe {
        tool,
        route,
        turns: k,
        reached_first_token: reached,
        completed,
        xact_before_first_token: net(c0, c1, window1),
        xact_after_first_token: net(c1, c2, window2),
        background_commits_per_sec: idle_per_sec,
        xact_raw_before_first_token: per(c0, c1),
        xact_raw_after_first_token: per(c1, c2),
        xid_before_first_token: per(x0, x1),
        xid_after_first_token: per(x1, x2),
        reliable: ctx.cfg.stats_wait_secs >= 11,
    }
}

/// The four probes (plain and tool turns, native and `/v1`), each in its place in `report`.
pub(super) async fn commit_probes(ctx: &Arc<Ctx>, report: &mut Report) {
    for (tool, route) in [
        (false, Route::Native),
        (true, Route::Native),
        (false, Route::V1),
        (true, Route::V1),
    ] {
        log(format!(
            "commit probe, {} turns{} (commits before the first text token / after it)",
            if tool { "tool" } else { "plain" },
            if route == Route::V1 { " via /v1" } else { "" }
        ));
        let cp = commit_probe(ctx, tool, route).await;
        log(format!(
            "  xact_commit before first token {}/turn, after {}/turn",
            crate::stats::f(cp.xact_before_first_token, 2),
            crate::stats::f(cp.xact_after_first_token, 2)
        ));
        match (tool, route) {
            (false, Route::Native) => report.commit_probe = Some(cp),
            (true, Route::Native) => report.commit_probe_tool = Some(cp),
            (false, Route::V1) => report.commit_probe_v1 = Some(cp),
            (true, Route::V1) => report.commit_probe_v1_tool = Some(cp),
            (_, Route::Catalogue | Route::Image) => {}
        }
    }
}
