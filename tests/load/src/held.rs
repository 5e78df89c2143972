//! Holding N open streams at once (`--held N`): the server runs its built-in demo model in
//! slow mode (`AGENTCHAT_DEMO_DELAY_MS`), so a stream costs the server one descriptor (the
//! client's connection) and no upstream socket. Through the fake upstream every stream costs
//! two (client + upstream), and 10,000 of them do not fit in this machine's hard limit of
//! 20,000 open files per process; the demo model keeps the server's side of a stream real
//! (turn start and its commit, budget reservation, the turn log, SSE events every delay, the
//! final store) without a second socket.
//!
//! The phase starts N turns at `--held-rate` starts per second, waits until each has
//! streamed its first word, samples the server's RSS, descriptors, threads and pool gauges,
//! holds them for a few seconds and samples again, then lets the replies finish by
//! themselves (the demo reply is ~70 words, one per delay) and samples after they closed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::bench::{fd_count, log, Ctx};
use crate::client::Outcome;
use crate::probe::Health;
use crate::stats::Dist;
use crate::sys;

/// How long the streams are held after all of them streamed, between the two samples.
const HOLD: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldSample {
    pub streaming: usize,
    pub rss_mib: Option<f64>,
    pub fds: Option<usize>,
    pub threads: Option<u64>,
    pub active_streams_gauge: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldResult {
    pub target: usize,
    pub launched: usize,
    pub demo_delay_ms: u64,
    pub rate_per_s: f64,
    /// Streams that had their first word when the target was reached (or the wait ended).
    pub streaming: usize,
    pub seconds_to_open: f64,
    pub idle: HeldSample,
    pub at_target: HeldSample,
    /// `HOLD` later, all still open.
    pub held: HeldSample,
    pub after_close: HeldSample,
    pub peak_rss_mib: Option<f64>,
    pub peak_fds: Option<usize>,
    /// (RSS at target − idle) / streams.
    pub kib_per_stream: Option<f64>,
    /// Descriptors at target − idle, per stream (1.0: only the client's socket).
    pub fds_per_stream: Option<f64>,
    pub generator_fds_at_target: Option<usize>,
    pub headers: Dist,
    pub ttft: Dist,
    pub completed: usize,
    pub errors: BTreeMap<String, u64>,
    pub health: Health,
    pub loadavg: String,
}

fn maxf(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn threads(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("Threads:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

async fn sample(ctx: &Ctx, streaming: usize) -> HeldSample {
    HeldSample {
        streaming,
        rss_mib: sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
        fds: fd_count(ctx.server_pid),
        threads: threads(ctx.server_pid),
        active_streams_gauge: crate::probe::scrape(ctx)
            .await
            .and_then(|s| s.get("agentchat_active_streams")),
    }
}

pub async fn held(ctx: &Arc<Ctx>, n: usize, rate: f64) -> HeldResult {
    let mut r = HeldResult {
        target: n,
        demo_delay_ms: ctx.cfg.demo_delay_ms,
        rate_per_s: rate,
        ..Default::default()
    };
    r.idle = sample(ctx, 0).await;
    let opened = Arc::new(AtomicU64::new(0));
    let mut handles: Vec<JoinHandle<Outcome>> = Vec::with_capacity(n);
    // Each reply is ~72 events one delay apart; a turn may take that plus queueing.
    let turn_timeout =
        Duration::from_millis(ctx.cfg.demo_delay_ms.saturating_mul(100)) + Duration::from_secs(300);
    log(format!(
        "held streams: opening {n} (demo model, {} ms a word) at {rate}/s",
        ctx.cfg.demo_delay_ms
    ));
    let t0 = Instant::now();
    let step = Duration::from_secs_f64(1.0 / rate.max(1.0));
    let (mut peak_rss, mut peak_fds) = (None::<f64>, None::<usize>);
    let mut health = Health::default();
    let mut next_probe = t0;
    for i in 0..n {
        let Some(conv) = ctx.take() else {
            *r.errors.entry("no_free_conversation".into()).or_insert(0) += 1;
            break;
        };
        tokio::time::sleep_until(t0 + step * i as u32).await;
        let (ctx2, opened2) = (ctx.clone(), opened.clone());
        handles.push(tokio::spawn(async move {
            let o = ctx2
                .api
                .turn(
                    &ctx2.tokens[conv.user],
                    &conv.id,
                    "a held stream",
                    Instant::now(),
                    turn_timeout,
                    Some(opened2),
                )
                .await;
            Ctx::give(&ctx2.pool, conv);
            o
        }));
        if Instant::now() >= next_probe {
            next_probe = Instant::now() + Duration::from_secs(1);
            peak_rss = maxf(
                peak_rss,
                sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
            );
            peak_fds = peak_fds.max(fd_count(ctx.server_pid));
        }
    }
    r.launched = handles.len();
    // Every launched turn streams (or ended early), bounded.
    let limit = Instant::now() + Duration::from_secs(240);
    loop {
        let streaming = opened.load(Ordering::Relaxed) as usize;
        let finished = handles.iter().filter(|h| h.is_finished()).count();
        if streaming + finished >= r.launched || Instant::now() > limit {
            break;
        }
        if Instant::now() >= next_probe {
            next_probe = Instant::now() + Duration::from_secs(2);
            health.probe(ctx).await;
            peak_rss = maxf(
                peak_rss,
                sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
            );
            peak_fds = peak_fds.max(fd_count(ctx.server_pid));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    r.seconds_to_open = t0.elapsed().as_secs_f64();
    r.at_target = sample(ctx, opened.load(Ordering::Relaxed) as usize).await;
    r.streaming = r.at_target.streaming;
    r.generator_fds_at_target = fd_count(std::process::id());
    log(format!(
        "  {} of {} streaming after {:.1} s: server RSS {} MiB, fds {:?}, threads {:?}",
        r.streaming,
        r.launched,
        r.seconds_to_open,
        crate::stats::f(r.at_target.rss_mib, 1),
        r.at_target.fds,
        r.at_target.threads
    ));
    let hold_until = Instant::now() + HOLD;
    while Instant::now() < hold_until {
        health.probe(ctx).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let still = handles.iter().filter(|h| !h.is_finished()).count();
    r.held = sample(ctx, still).await;
    log(format!(
        "  held {HOLD:?}: {still} still open, server RSS {} MiB, fds {:?}",
        crate::stats::f(r.held.rss_mib, 1),
        r.held.fds
    ));
    for s in [&r.at_target, &r.held] {
        peak_rss = maxf(peak_rss, s.rss_mib);
        peak_fds = peak_fds.max(s.fds);
    }
    r.peak_rss_mib = peak_rss;
    r.peak_fds = peak_fds;
    if r.streaming > 0 {
        if let (Some(top), Some(idle)) = (r.at_target.rss_mib, r.idle.rss_mib) {
            r.kib_per_stream = Some((top - idle) * 1024.0 / r.streaming as f64);
        }
        if let (Some(top), Some(idle)) = (r.at_target.fds, r.idle.fds) {
            r.fds_per_stream = Some((top as f64 - idle as f64) / r.streaming as f64);
        }
    }
    // The replies end by themselves.
    let mut outs = Vec::with_capacity(handles.len());
    let join_by = Instant::now() + turn_timeout;
    for h in handles {
        match tokio::time::timeout_at(join_by, h).await {
            Ok(Ok(o)) => outs.push(o),
            _ => *r.errors.entry("join_timeout".into()).or_insert(0) += 1,
        }
    }
    r.completed = outs.iter().filter(|o| o.ok).count();
    for (k, v) in crate::stats::count_errors(outs.iter().map(|o| &o.error)) {
        *r.errors.entry(k).or_insert(0) += v;
    }
    r.headers = Dist::of(outs.iter().filter_map(|o| o.headers_us).collect());
    r.ttft = Dist::of(outs.iter().filter_map(|o| o.ttft_us).collect());
    // Connections close; give the keep-alive pool time to let them go.
    let closed_by = Instant::now() + Duration::from_secs(20);
    while fd_count(ctx.server_pid).unwrap_or(0) > r.idle.fds.unwrap_or(0) + 16
        && Instant::now() < closed_by
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    r.after_close = sample(ctx, 0).await;
    health.probe(ctx).await;
    r.health = health;
    r.loadavg = sys::loadavg();
    log(format!(
        "  {} completed, errors {:?}; after close RSS {} MiB, fds {:?}",
        r.completed,
        r.errors,
        crate::stats::f(r.after_close.rss_mib, 1),
        r.after_close.fds
    ));
    r
}
