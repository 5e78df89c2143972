//! Burst admission: N turn starts fired at one instant, each on a conversation of its own,
//! against a pool of a few dozen database connections. Every start should be admitted (the
//! server queues starts rather than failing them once the pool's usual wait runs out); a 503
//! counts as refused. Measured: statuses, request → response headers (how long a start
//! waited for its turn), TTFT, whole-turn time, and the server's peak descriptors and RSS.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::{fd_count, log, Ctx};
use crate::client::{self, Api, Outcome};
use crate::fake::Directive;
use crate::stats::{count_errors, Dist};
use crate::sys;

#[derive(Debug, Clone, Default, Serialize)]
pub struct BurstResult {
    pub starts: usize,
    /// Answered 2xx (the stream began).
    pub admitted: usize,
    /// Answered 503 (refused: queue full or pool timeout).
    pub refused_503: usize,
    /// Answered with another non-2xx status, by status.
    pub other_status: BTreeMap<u16, u64>,
    /// Everything that did not end in `done`, by kind.
    pub errors: BTreeMap<String, u64>,
    pub completed: usize,
    /// Request sent → response headers, over every answered request.
    pub headers: Dist,
    pub ttft: Dist,
    pub turn_total: Dist,
    /// Fired → the last turn ended.
    pub secs: f64,
    pub peak_server_fds: Option<usize>,
    pub peak_server_rss_mib: Option<f64>,
    pub idle_server_rss_mib: Option<f64>,
    /// `/readyz` and the pool's gauges, probed every half second while the burst ran.
    pub health: crate::probe::Health,
    /// The generator's own descriptors at their peak (10,000 client sockets need them).
    pub peak_generator_fds: Option<usize>,
    pub loadavg: String,
}

/// Fires `n` starts at once (fewer if the kit has fewer free conversations).
pub async fn burst(ctx: &Arc<Ctx>, n: usize) -> BurstResult {
    let mut r = BurstResult {
        idle_server_rss_mib: sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
        ..Default::default()
    };
    let d = Directive {
        ttft_ms: ctx.cfg.ttft_ms,
        n: ctx.cfg.deltas,
        gap_ms: ctx.cfg.gap_ms,
        ..Default::default()
    };
    let content = format!("burst {}", d.render());
    // Its own client: the shared one gives up connecting after 10 s, and a start may wait
    // for its turn (headers) up to the server's turn deadline, connecting included.
    let api = match client::http_client_connecting_within(n, client::TURN_DEADLINE) {
        Ok(http) => Api {
            http,
            base: ctx.api.base.clone(),
        },
        Err(e) => {
            log(format!("burst: no HTTP client: {e}"));
            return r;
        }
    };
    let (fire, _) = tokio::sync::broadcast::channel::<Instant>(1);
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let Some(conv) = ctx.take() else {
            *r.errors.entry("no_free_conversation".into()).or_insert(0) += 1;
            break;
        };
        let mut go = fire.subscribe();
        let (ctx2, content, api) = (ctx.clone(), content.clone(), api.clone());
        handles.push(tokio::spawn(async move {
            let Ok(at) = go.recv().await else {
                Ctx::give(&ctx2.pool, conv);
                return Outcome::default();
            };
            // Headers may take the whole deadline; the streamed reply a little longer.
            let o = api
                .turn(
                    &ctx2.tokens[conv.user],
                    &conv.id,
                    &content,
                    at,
                    client::TURN_DEADLINE + Duration::from_secs(60),
                    None,
                )
                .await;
            Ctx::give(&ctx2.pool, conv);
            o
        }));
    }
    r.starts = handles.len();
    // Every task is parked on the signal before it fires.
    tokio::time::sleep(Duration::from_millis(500)).await;
    log(format!("burst: firing {} turn starts at once", r.starts));
    let running = Arc::new(AtomicBool::new(true));
    let prober = {
        let (running, ctx) = (running.clone(), ctx.clone());
        tokio::spawn(async move {
            let mut health = crate::probe::Health::default();
            while running.load(Ordering::Relaxed) {
                health.probe(&ctx).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            health
        })
    };
    let sampler = {
        let (running, pid) = (running.clone(), ctx.server_pid);
        tokio::spawn(async move {
            let (mut fds, mut rss, mut gen_fds) = (None::<usize>, None::<f64>, None::<usize>);
            while running.load(Ordering::Relaxed) {
                fds = fds.max(fd_count(pid));
                gen_fds = gen_fds.max(fd_count(std::process::id()));
                let now = sys::rss_kib(pid).map(|k| k as f64 / 1024.0);
                rss = match (rss, now) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (fds, rss, gen_fds)
        })
    };
    let t0 = Instant::now();
    let _ = fire.send(t0);
    let mut outs = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(o) = h.await {
            outs.push(o);
        }
    }
    r.secs = t0.elapsed().as_secs_f64();
    running.store(false, Ordering::Relaxed);
    if let Ok((fds, rss, gen_fds)) = sampler.await {
        r.peak_server_fds = fds;
        r.peak_server_rss_mib = rss;
        r.peak_generator_fds = gen_fds;
    }
    r.health = prober.await.unwrap_or_default();
    for o in &outs {
        match o.status {
            Some(s) if (200..300).contains(&s) => r.admitted += 1,
            Some(503) => r.refused_503 += 1,
            Some(s) => *r.other_status.entry(s).or_insert(0) += 1,
            None => {}
        }
    }
    r.completed = outs.iter().filter(|o| o.ok).count();
    for (k, v) in count_errors(outs.iter().map(|o| &o.error)) {
        *r.errors.entry(k).or_insert(0) += v;
    }
    r.headers = Dist::of(outs.iter().filter_map(|o| o.headers_us).collect());
    r.ttft = Dist::of(outs.iter().filter_map(|o| o.ttft_us).collect());
    r.turn_total = Dist::of(outs.iter().filter(|o| o.ok).map(|o| o.total_us).collect());
    r.loadavg = sys::loadavg();
    log(format!(
        "  admitted {} of {}, 503: {}, completed {}, headers p50 {} / p99 {} ms, {:.1} s in all; health {:?}",
        r.admitted,
        r.starts,
        r.refused_503,
        r.completed,
        crate::stats::f(r.headers.p50_ms, 0),
        crate::stats::f(r.headers.p99_ms, 0),
        r.secs,
        r.health
    ));
    r
}
