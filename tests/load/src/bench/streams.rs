//! The streams phase: many turns held open at once (server memory and descriptors per open
//! stream), released, and sampled again after close, over a few cycles.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::ctx::release;
use super::models::closed;
use super::{fd_count, log, Ctx};
use crate::client::Outcome;
use crate::fake::Directive;
use crate::scenarios::Route;
use crate::sys;

#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamPoint {
    pub cycle: usize,
    pub open_streams: usize,
    pub reached: usize,
    pub server_rss_mib: Option<f64>,
    pub server_fds: Option<usize>,
    pub seconds_to_open: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamsResult {
    pub idle_rss_mib: Option<f64>,
    pub idle_fds: Option<usize>,
    pub points: Vec<StreamPoint>,
    /// Sampled once the streams' connections have closed and after 2 s of light traffic.
    pub after_close_rss_mib: Vec<Option<f64>>,
    pub after_close_fds: Vec<Option<usize>>,
    pub completed: usize,
    pub errors: BTreeMap<String, u64>,
    pub mib_per_1000: Option<f64>,
    pub growth_after_close_mib: Option<f64>,
    pub after_close_minus_idle_mib: Option<f64>,
}

/// Waits until the streams' connections are really gone, then serves a little ordinary
/// traffic, and answers the server's descriptor count. A turn that has ended leaves its HTTP
/// connection open in the generator's keep-alive pool for a few seconds (4 s idle timeout),
/// and each open connection holds the server's buffers: sampling RSS before they close
/// measured the connections, not the streams. The traffic matters too: the allocator gives
/// freed pages back to the OS on its next allocations, not while the process sleeps, so a
/// server that keeps serving is what "after close" means.
async fn settle_after_close(
    ctx: &Arc<Ctx>,
    idle_fds: Option<usize>,
    errors: &mut BTreeMap<String, u64>,
) -> Option<usize> {
    let closed_by = Instant::now() + Duration::from_secs(20);
    // Slack for pooled upstream and database connections opened or dropped meanwhile.
    let settled = |fds: Option<usize>| match (fds, idle_fds) {
        (Some(now), Some(idle)) => now <= idle + 16,
        _ => true,
    };
    while !settled(fd_count(ctx.server_pid)) && Instant::now() < closed_by {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let light = Directive {
        ttft_ms: 5,
        n: 5,
        gap_ms: 5,
        ..Default::default()
    };
    let traffic = closed(ctx, "after close", Route::Native, light, 4, 2.0).await;
    for (e, n) in traffic.errors {
        *errors.entry(format!("after close: {e}")).or_insert(0) += n;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    fd_count(ctx.server_pid)
}

/// Opens turns whose upstream holds the stream open, up to each target, then releases them.
pub(super) async fn streams(ctx: &Arc<Ctx>) -> StreamsResult {
    let mut r = StreamsResult::default();
    tokio::time::sleep(Duration::from_secs(2)).await;
    r.idle_rss_mib = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
    r.idle_fds = fd_count(ctx.server_pid);
    let hold = Directive {
        ttft_ms: 5,
        n: 1,
        gap_ms: 5000,
        hold_s: 600,
        ..Default::default()
    };
    let content = format!("hold {}", hold.render());
    let max_target = ctx.cfg.streams.last().copied().unwrap_or(0);
    for cycle in 0..ctx.cfg.stream_cycles {
        let opened = Arc::new(AtomicU64::new(0));
        let mut handles: Vec<JoinHandle<Outcome>> = Vec::new();
        let mut launched = 0usize;
        for &target in &ctx.cfg.streams {
            log(format!(
                "streams: cycle {} opening up to {target}",
                cycle + 1
            ));
            let t0 = Instant::now();
            let limit = t0 + Duration::from_secs(180);
            while launched < target && Instant::now() < limit {
                // At most 128 turns starting at once.
                if launched as u64 >= opened.load(Ordering::Relaxed) + 128 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let Some(conv) = ctx.take() else {
                    r.errors
                        .entry("no_free_conversation".into())
                        .and_modify(|c| *c += 1)
                        .or_insert(1);
                    break;
                };
                let (ctx2, content, opened2) = (ctx.clone(), content.clone(), opened.clone());
                handles.push(tokio::spawn(async move {
                    let o = ctx2
                        .api
                        .turn(
                            &ctx2.tokens[conv.user],
                            &conv.id,
                            &content,
                            Instant::now(),
                            Duration::from_secs(900),
                            Some(opened2),
                        )
                        .await;
                    Ctx::give(&ctx2.pool, conv);
                    o
                }));
                launched += 1;
            }
            // Wait until every launched turn streams (or finished early), bounded.
            while (opened.load(Ordering::Relaxed) as usize) < launched
                && handles.iter().filter(|h| !h.is_finished()).count() > 0
                && Instant::now() < limit
            {
                let finished = handles.iter().filter(|h| h.is_finished()).count();
                if opened.load(Ordering::Relaxed) as usize + finished >= launched {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let secs = t0.elapsed().as_secs_f64();
            tokio::time::sleep(Duration::from_secs(2)).await;
            let point = StreamPoint {
                cycle: cycle + 1,
                open_streams: target,
                reached: opened.load(Ordering::Relaxed) as usize,
                server_rss_mib: sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
                server_fds: fd_count(ctx.server_pid),
                seconds_to_open: secs,
            };
            log(format!(
                "  {} streaming, server RSS {} MiB, fds {:?}",
                point.reached,
                crate::stats::f(point.server_rss_mib, 1),
                point.server_fds
            ));
            r.points.push(point);
        }
        release(ctx).await;
        let mut done = 0;
        let join_by = Instant::now() + Duration::from_secs(180);
        for h in handles {
            match tokio::time::timeout_at(join_by, h).await {
                Ok(Ok(o)) => {
                    if o.ok {
                        done += 1;
                    } else if let Some(e) = o.error {
                        *r.errors.entry(e).or_insert(0) += 1;
                    }
                }
                _ => *r.errors.entry("join_timeout".into()).or_insert(0) += 1,
            }
        }
        r.completed += done;
        let fds = settle_after_close(ctx, r.idle_fds, &mut r.errors).await;
        let after = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
        log(format!(
            "  released; {done} completed; server RSS after close {} MiB, fds {fds:?}",
            crate::stats::f(after, 1)
        ));
        r.after_close_rss_mib.push(after);
        r.after_close_fds.push(fds);
    }
    let top = r
        .points
        .iter()
        .filter(|p| p.cycle == 1 && p.open_streams == max_target)
        .filter_map(|p| p.server_rss_mib)
        .next();
    if let (Some(top), Some(idle)) = (top, r.idle_rss_mib) {
        if max_target > 0 {
            r.mib_per_1000 = Some((top - idle) / (max_target as f64 / 1000.0));
        }
    }
    if let (Some(Some(first)), Some(Some(last))) =
        (r.after_close_rss_mib.first(), r.after_close_rss_mib.last())
    {
        r.growth_after_close_mib = Some(last - first);
        if let Some(idle) = r.idle_rss_mib {
            r.after_close_minus_idle_mib = Some(last - idle);
        }
    }
    r
}
