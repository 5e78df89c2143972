//! The soak: `streams` turns streaming at all times for a while (each worker starts its next
//! turn as soon as one ends), a mix of plain turns (~4 s each), tool turns and MCP tool turns,
//! while two accounts run on small budgets of their own so that reservations near the limit,
//! refusals and exhausted budgets are part of the load. Server RSS and descriptors are
//! sampled every `SAMPLE_EVERY`; at the end the budget invariant is checked in Postgres:
//! no period has spent more than its limit, and no reservation or hold is left over.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::{fd_count, log, Ctx};
use crate::fake::Directive;
use crate::sys;

const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Accounts 1 and 2 (not the admin) get this budget of their own.
const TIGHT_BUDGET: i64 = 150_000;
const TIGHT_USERS: [usize; 2] = [1, 2];

#[derive(Debug, Clone, Default, Serialize)]
pub struct SoakSample {
    pub t_s: f64,
    pub rss_mib: Option<f64>,
    pub fds: Option<usize>,
    /// Turns finished (ok) so far.
    pub turns_ok: u64,
    pub streaming: u64,
    /// Series in `/metrics` (a label set per path, user or conversation would grow).
    pub metric_series: Option<usize>,
    /// `agentchat_active_streams` and turn starts waiting for the pool, from `/metrics`.
    pub active_streams: Option<f64>,
    pub pool_waiting: Option<f64>,
    /// Pool connections in use (`agentchat_db_pool{state="in_use"}`) and the test database's
    /// backends (`pg_stat_activity`): connections that only grow would show.
    pub pool_in_use: Option<f64>,
    pub db_connections: Option<u64>,
}

/// What Postgres and the server say about transaction conflicts over the soak.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Conflicts {
    /// `pg_stat_database.deadlocks` of the test database before and after (read through the
    /// maintenance database, after the statistics flush wait): the difference must be 0.
    pub deadlocks_before: Option<i64>,
    pub deadlocks_after: Option<i64>,
    /// `agentchat_db_conflicts_total` at the end (every label): conflicts lost and retried.
    pub retried: Option<f64>,
    /// `agentchat_titles_total` at the end, all outcomes (titles are on in a `--soak` run).
    pub titles: Option<f64>,
}

/// The budget invariant, read in Postgres after the soak.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Invariant {
    pub periods: u64,
    /// Periods whose `spent` exceeds their limit: must be 0.
    pub over_limit: u64,
    /// Reserved tokens and holds left after every turn ended: must be 0.
    pub reserved_left: i64,
    pub holds_left: u64,
    /// The tight accounts' `spent / limit`, highest.
    pub tight_spent_fraction: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SoakResult {
    pub secs: u64,
    pub streams: usize,
    pub samples: Vec<SoakSample>,
    pub turns_ok: u64,
    pub errors: BTreeMap<String, u64>,
    /// Mean RSS over the first and the last fifth of the samples (after the first minute when
    /// the soak is long enough), and the difference.
    pub rss_early_mib: Option<f64>,
    pub rss_late_mib: Option<f64>,
    pub fds_early: Option<f64>,
    pub fds_late: Option<f64>,
    /// Least-squares slope of RSS over the settled samples, MiB per minute, and over their
    /// second half only (a leak keeps its slope; filling caches flatten out).
    pub rss_slope_mib_per_min: Option<f64>,
    pub rss_slope_late_mib_per_min: Option<f64>,
    /// Turns per conversation before a worker moves to a new one (0: never), so that the
    /// history a turn loads stays the same size through the soak.
    pub turns_per_conversation: u64,
    pub conversations_created: u64,
    pub flat_memory: bool,
    pub flat_fds: bool,
    pub invariant: Option<Invariant>,
    pub invariant_error: Option<String>,
    /// Answers 5xx (turns and conversation creations): must be 0.
    pub server_errors: u64,
    pub conflicts: Conflicts,
    /// Test-database backends, mean of the first and the last fifth of the samples.
    pub db_connections_early: Option<f64>,
    pub db_connections_late: Option<f64>,
    pub ok: bool,
    pub loadavg_start: String,
    pub loadavg_end: String,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

/// The turn a worker runs for its `i`-th turn: mostly plain, one in ten a tool turn, one in
/// ten an MCP tool turn (when the kit runs its MCP server).
fn kind(i: u64, mcp: bool) -> Directive {
    let plain = Directive {
        ttft_ms: 20,
        n: 40,
        gap_ms: 100,
        ..Default::default()
    };
    match i % 10 {
        3 => Directive {
            tool: true,
            ..plain
        },
        7 if mcp => Directive {
            tool: true,
            mcp: true,
            ..plain
        },
        _ => plain,
    }
}

/// Least-squares slope of `(t_s, value)` points, per minute.
fn slope_per_min(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let mt = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mv = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum();
    let den: f64 = points.iter().map(|p| (p.0 - mt).powi(2)).sum();
    (den > 0.0).then(|| num / den * 60.0)
}

pub async fn soak(ctx: &Arc<Ctx>, secs: u64, streams: usize) -> SoakResult {
    let rotate = ctx.cfg.soak_rotate;
    let mut r = SoakResult {
        secs,
        streams,
        turns_per_conversation: rotate,
        loadavg_start: sys::loadavg(),
        ..Default::default()
    };
    let tight = tighten(ctx).await;
    if let Err(e) = &tight {
        r.errors.insert(format!("setting tight budgets: {e:#}"), 1);
    }
    r.conflicts.deadlocks_before = deadlocks(ctx);
    let titled = ctx.cfg.soak_secs.is_some();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let ok = Arc::new(AtomicU64::new(0));
    let created = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let mcp = ctx.mcp_direct.is_some();
    let mut workers = Vec::new();
    for w in 0..streams {
        let Some(conv) = ctx.take() else {
            *r.errors.entry("no_free_conversation".into()).or_insert(0) += 1;
            break;
        };
        let (ctx, ok, errors) = (ctx.clone(), ok.clone(), errors.clone());
        let created = created.clone();
        workers.push(tokio::spawn(async move {
            let mut i = w as u64;
            let mut conv_id = conv.id.clone();
            let mut on_this = 0u64;
            while Instant::now() < deadline {
                if rotate > 0 && on_this >= rotate {
                    let token = &ctx.tokens[conv.user];
                    let made = if titled {
                        ctx.api.create_untitled(token).await
                    } else {
                        let title = format!("soak {w} {i}");
                        ctx.api.create_conversation(token, &title).await
                    };
                    match made {
                        Ok(id) => {
                            conv_id = id;
                            created.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            // A refusal here ended the issue-43 soak: counted, by status.
                            let kind = format!("create_{}", error_kind(&format!("{e:#}")));
                            if let Ok(mut m) = errors.lock() {
                                *m.entry(kind).or_insert(0) += 1;
                            }
                        }
                    }
                    on_this = 0;
                }
                on_this += 1;
                let content = format!("soak {}", kind(i, mcp).render());
                i += 1;
                let o = ctx
                    .api
                    .turn(
                        &ctx.tokens[conv.user],
                        &conv_id,
                        &content,
                        Instant::now(),
                        Duration::from_secs(60),
                        None,
                    )
                    .await;
                if o.ok {
                    ok.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let e = o.error.unwrap_or_else(|| "unknown".into());
                let refused = e == "http_429";
                if let Ok(mut m) = errors.lock() {
                    *m.entry(e).or_insert(0) += 1;
                }
                // An exhausted budget stays exhausted: do not spin on it.
                let pause = if refused { 1000 } else { 100 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            Ctx::give(&ctx.pool, conv);
        }));
    }
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (ctx, ok, running) = (ctx.clone(), ok.clone(), running.clone());
        tokio::spawn(async move {
            let t0 = Instant::now();
            let mut samples = Vec::new();
            while running.load(Ordering::Relaxed) {
                let metrics = crate::probe::scrape(&ctx).await;
                samples.push(SoakSample {
                    t_s: t0.elapsed().as_secs_f64(),
                    rss_mib: sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
                    fds: fd_count(ctx.server_pid),
                    turns_ok: ok.load(Ordering::Relaxed),
                    streaming: crate::bench::upstream_active(&ctx).await.unwrap_or(0),
                    metric_series: metrics.as_ref().map(|m| m.series),
                    active_streams: metrics
                        .as_ref()
                        .and_then(|m| m.get("agentchat_active_streams")),
                    pool_waiting: metrics
                        .as_ref()
                        .and_then(|m| m.get("agentchat_db_pool_waiting")),
                    pool_in_use: metrics
                        .as_ref()
                        .and_then(|m| m.get("agentchat_db_pool_connections:in_use")),
                    db_connections: db_connections(&ctx),
                });
                let next = t0 + SAMPLE_EVERY * samples.len() as u32;
                while running.load(Ordering::Relaxed) && Instant::now() < next {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            samples
        })
    };
    log(format!("soak: {streams} streams for {secs} s"));
    for w in workers {
        let _ = w.await;
    }
    running.store(false, Ordering::Relaxed);
    r.samples = sampler.await.unwrap_or_default();
    r.turns_ok = ok.load(Ordering::Relaxed);
    r.conversations_created = created.load(Ordering::Relaxed);
    if let Ok(m) = errors.lock() {
        for (k, v) in m.iter() {
            *r.errors.entry(k.clone()).or_insert(0) += v;
        }
    }
    judge(&mut r);
    r.server_errors = r
        .errors
        .iter()
        .filter(|(k, _)| k.contains("http_5"))
        .map(|(_, n)| n)
        .sum();
    // Holds are released as turns end (and titles finish); give the last ones a moment,
    // and idle backends the time to flush their statistics (up to 10 s).
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some(m) = crate::probe::scrape(ctx).await {
        r.conflicts.retried = m.get("agentchat_db_conflicts_total");
        r.conflicts.titles = m.get("agentchat_titles_total");
    }
    tokio::time::sleep(Duration::from_secs(ctx.cfg.stats_wait_secs)).await;
    r.conflicts.deadlocks_after = deadlocks(ctx);
    match invariant(ctx) {
        Ok(inv) => r.invariant = Some(inv),
        Err(e) => r.invariant_error = Some(format!("{e:#}")),
    }
    let no_deadlocks = matches!(
        (r.conflicts.deadlocks_before, r.conflicts.deadlocks_after),
        (Some(a), Some(b)) if a == b
    );
    r.ok = r.flat_memory
        && r.flat_fds
        && r.turns_ok > 0
        && r.server_errors == 0
        && no_deadlocks
        && r.invariant.as_ref().is_some_and(|i| {
            i.over_limit == 0 && i.reserved_left == 0 && i.holds_left == 0 && i.periods > 0
        });
    r.loadavg_end = sys::loadavg();
    log(format!(
        "  deadlocks {:?} -> {:?}, conflicts retried {:?}, titles {:?}, 5xx {}; db connections {} -> {}",
        r.conflicts.deadlocks_before,
        r.conflicts.deadlocks_after,
        r.conflicts.retried,
        r.conflicts.titles,
        r.server_errors,
        crate::stats::f(r.db_connections_early, 1),
        crate::stats::f(r.db_connections_late, 1),
    ));
    log(format!(
        "  {} turns ok, errors {:?}; RSS {} → {} MiB (slope {} MiB/min, second half {}), fds {} → {}; invariant {:?}",
        r.turns_ok,
        r.errors,
        crate::stats::f(r.rss_early_mib, 1),
        crate::stats::f(r.rss_late_mib, 1),
        crate::stats::f(r.rss_slope_mib_per_min, 2),
        crate::stats::f(r.rss_slope_late_mib_per_min, 2),
        crate::stats::f(r.fds_early, 0),
        crate::stats::f(r.fds_late, 0),
        r.invariant
    ));
    r
}

/// Early and late means; flat = the late RSS within 10 % + 8 MiB of the early one, the late
/// descriptor count within 10 % + 16 of the early one.
fn judge(r: &mut SoakResult) {
    // Skip the first minute of a long soak (pools and caches fill up).
    let settled: Vec<&SoakSample> = r
        .samples
        .iter()
        .filter(|s| r.secs < 300 || s.t_s >= 60.0)
        .collect();
    let fifth = (settled.len() / 5).max(1);
    let early = &settled[..fifth.min(settled.len())];
    let late = &settled[settled.len().saturating_sub(fifth)..];
    r.rss_early_mib = mean(early.iter().filter_map(|s| s.rss_mib));
    r.rss_late_mib = mean(late.iter().filter_map(|s| s.rss_mib));
    r.fds_early = mean(early.iter().filter_map(|s| s.fds.map(|f| f as f64)));
    r.fds_late = mean(late.iter().filter_map(|s| s.fds.map(|f| f as f64)));
    r.db_connections_early = mean(
        early
            .iter()
            .filter_map(|s| s.db_connections.map(|c| c as f64)),
    );
    r.db_connections_late = mean(
        late.iter()
            .filter_map(|s| s.db_connections.map(|c| c as f64)),
    );
    let points: Vec<(f64, f64)> = settled
        .iter()
        .filter_map(|s| Some((s.t_s, s.rss_mib?)))
        .collect();
    r.rss_slope_mib_per_min = slope_per_min(&points);
    r.rss_slope_late_mib_per_min = slope_per_min(&points[points.len() / 2..]);
    r.flat_memory =
        matches!((r.rss_early_mib, r.rss_late_mib), (Some(a), Some(b)) if b <= a * 1.10 + 8.0);
    r.flat_fds = matches!((r.fds_early, r.fds_late), (Some(a), Some(b)) if b <= a * 1.10 + 16.0);
}

/// Small budgets of their own for the tight accounts: `TIGHT_BUDGET` more than what they
/// have already spent (earlier phases of a run spend too), so that the invariant measures the
/// soak and not a limit lowered below past spending.
async fn tighten(ctx: &Ctx) -> anyhow::Result<()> {
    let users = ctx.api.users(&ctx.tokens[0]).await?;
    for i in TIGHT_USERS {
        let name = format!("load_user_{i}");
        if let Some((_, id)) = users.iter().find(|(u, _)| *u == name) {
            anyhow::ensure!(
                id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
                "unexpected user id {id}"
            );
            let sql = format!(
                "SELECT coalesce(max(spent + reserved), 0) FROM budget_periods \
                 WHERE user_id = '{id}'"
            );
            let out = sys::psql_in(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db, &sql)?;
            let spent: i64 = out.trim().parse().unwrap_or(0);
            ctx.api
                .set_user_budget(&ctx.tokens[0], id, spent + TIGHT_BUDGET)
                .await?;
        }
    }
    Ok(())
}

/// `pg_stat_database.deadlocks` of the test database, read through the maintenance
/// database.
fn deadlocks(ctx: &Ctx) -> Option<i64> {
    let sql = format!(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = '{}'",
        ctx.db
    );
    sys::psql(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &sql)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The test database's backends now (the server's pool and anyone else connected).
fn db_connections(ctx: &Ctx) -> Option<u64> {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}'",
        ctx.db
    );
    sys::psql(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &sql)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `http_503` from an error's text (`… HTTP 503 …` or `http_503`), else `failed`.
fn error_kind(text: &str) -> String {
    let digits = |rest: &str| -> Option<String> {
        let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (code.len() == 3).then(|| format!("http_{code}"))
    };
    for marker in ["http_", "HTTP ", "status "] {
        if let Some(i) = text.find(marker) {
            if let Some(kind) = digits(&text[i + marker.len()..]) {
                return kind;
            }
        }
    }
    "failed".into()
}

fn invariant(ctx: &Ctx) -> anyhow::Result<Invariant> {
    let sql = "SELECT count(*), \
          count(*) FILTER (WHERE lim IS NOT NULL AND b.spent > lim), \
          coalesce(sum(b.reserved), 0), \
          (SELECT count(*) FROM budget_holds), \
          coalesce(max(b.spent::float8 / lim) FILTER (WHERE u.token_budget IS NOT NULL), 0) \
        FROM budget_periods b JOIN users u ON u.id = b.user_id JOIN roles r ON r.name = u.role, \
        LATERAL (SELECT coalesce(u.token_budget, r.token_budget) AS lim) l";
    let out = sys::psql_in(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db, sql)?;
    let v: Vec<&str> = out.split('|').collect();
    anyhow::ensure!(v.len() == 5, "unexpected answer {out}");
    Ok(Invariant {
        periods: v[0].parse()?,
        over_limit: v[1].parse()?,
        reserved_left: v[2].parse()?,
        holds_left: v[3].parse()?,
        tight_spent_fraction: v[4].parse()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_is_per_minute() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64 * 10.0, 50.0 + i as f64))
            .collect();
        let s = slope_per_min(&pts).unwrap();
        assert!((s - 6.0).abs() < 1e-9, "{s}");
        assert_eq!(slope_per_min(&pts[..2]), None);
    }
}
