//! Search latency: every user at once, each a closed loop of `GET /api/knowledge/search`
//! (generated two- or three-word queries, `k=5`; one in twenty scoped to the user's own
//! collection, one in twenty to a collection they may not read), against the same loops of
//! a trivial authenticated GET (`/api/knowledge`: the token check and its one query, no
//! search) in the same run; then both again one request at a time (what a search costs when
//! nothing queues). Each phase is bounded by `--knowledge-secs` and
//! `--knowledge-requests`. Every result is checked against what the kit granted its user:
//! a chunk of a collection they may not read (or, scoped, of another collection) is a
//! violation. The server's statement is run once more, alone, under `EXPLAIN (ANALYZE,
//! BUFFERS)` with the parameters of the slowest search under load, of the median unscoped
//! search one at a time, and of the slowest one at a time of each kind (unscoped, scoped
//! to the user's own collection, scoped to one they may not read).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::corpus::{self, Rng};
use super::ingest::{metric_delta, metrics};
use super::seed::Seeded;
use super::verify::{check, Sample, Tally};
use super::Users;
use crate::bench::{log, Config, Started};
use crate::client::us;
use crate::stats::Dist;
use crate::sys;

/// The search target: p99 at full concurrency.
pub const TARGET_P99_MS: f64 = 50.0;
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadPhase {
    pub what: String,
    /// Closed loops (0 for the open-model phase).
    pub concurrency: usize,
    /// The open-model phase's arrival rate.
    pub rate_per_s: Option<f64>,
    pub ok: usize,
    pub errors: BTreeMap<String, u64>,
    pub secs: f64,
    pub per_s: f64,
    pub latency: Dist,
    pub server_cpu_ms_per_req: Option<f64>,
    pub pg_backend_cpu_ms_per_req: Option<f64>,
    /// The kit's own (it shares the cores).
    pub generator_cpu_ms_per_req: Option<f64>,
    /// Searches only: the server's own mean (`agentchat_knowledge_search_duration_seconds`:
    /// embedding the query, waiting for a connection, the statement).
    pub server_search_mean_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchLoad {
    pub users: usize,
    pub phases: Vec<LoadPhase>,
    /// Search p50 / p99 over the baseline's, at full concurrency and one at a time.
    pub ratio_p50: Option<f64>,
    pub ratio_p99: Option<f64>,
    pub ratio_p50_single: Option<f64>,
    pub ratio_p99_single: Option<f64>,
    pub searches: u64,
    pub results: u64,
    pub empty: u64,
    /// Empty answers to searches that were not scoped to a collection the user may not read
    /// (those must be empty): none of what the user may read has the query's words, nor a
    /// vector within the server's `knowledge.min_similarity` (0.2) of the query's.
    pub empty_readable: u64,
    pub empty_examples: Vec<String>,
    /// Results from a collection shared with the user's role (grants at work).
    pub shared_results: u64,
    pub scoped_own: u64,
    pub scoped_foreign: u64,
    /// Results outside what the user may read (or outside the scope asked for).
    pub violations: u64,
    pub violation_examples: Vec<String>,
    /// Searches run again alone under `EXPLAIN (ANALYZE, BUFFERS)`.
    pub explains: Vec<Explained>,
}

/// One search's statement under `EXPLAIN (ANALYZE, BUFFERS)`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Explained {
    /// Which search: "slowest under load", "median alone, unscoped", ...
    pub label: String,
    /// Its latency through the API when it ran in the phase.
    pub api_ms: f64,
    pub query: String,
    pub planning_ms: Option<f64>,
    pub execution_ms: Option<f64>,
    pub plan: Option<String>,
    pub error: Option<String>,
}

/// One search: (user, query, scope).
fn next_search(rng: &mut Rng, user: usize, seeded: &Seeded) -> (String, Option<String>) {
    let q = corpus::query(rng);
    let scope = match rng.below(20) {
        0 => Some(seeded.collections[user].id.clone()),
        1 => seeded.foreign[user].clone(),
        _ => None,
    };
    (q, scope)
}

/// How a phase sends its requests.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// This many closed loops (with more than one, loop w is user w; with one, the users
    /// take turns).
    Closed(usize),
    /// Arrivals at a fixed rate per second, users in turn; latency counts from the
    /// scheduled arrival, so queueing anywhere shows.
    Open(f64),
}

/// One request; its latency from `from` (the send, or the scheduled arrival).
async fn request(
    api: &crate::client::Api,
    token: &str,
    search: bool,
    q: &str,
    scope: Option<&str>,
    from: Instant,
) -> Result<(u64, bytes::Bytes), String> {
    let rb = if search {
        let mut query = vec![("q", q), ("k", "5")];
        if let Some(s) = scope {
            query.push(("collection", s));
        }
        api.http
            .get(format!("{}/api/knowledge/search", api.base))
            .query(&query)
    } else {
        api.http.get(format!("{}/api/knowledge", api.base))
    };
    let body = match rb.bearer_auth(token).timeout(TIMEOUT).send().await {
        Ok(r) if r.status().is_success() => r.bytes().await.map_err(|e| format!("body: {e}")),
        Ok(r) => Err(format!("HTTP {}", r.status().as_u16())),
        Err(e) if e.is_timeout() => Err("timeout".into()),
        Err(_) => Err("request".into()),
    }?;
    Ok((us(from.elapsed()), body))
}

#[allow(clippy::too_many_arguments)]
async fn phase(
    started: &Started,
    users: &Users,
    seeded: &Arc<Seeded>,
    tally: &Arc<Tally>,
    search: bool,
    mode: Mode,
    secs: f64,
    max: usize,
    measured: bool,
) -> LoadPhase {
    let api = started.api.clone();
    let m0 = metrics(&api).await;
    let (cpu0, pg0) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let gen0 = sys::cpu_ticks(std::process::id());
    let t0 = Instant::now();
    let until = t0 + Duration::from_secs_f64(secs);
    let sent = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(users.tokens.clone());
    // The slowest searches are kept from the closed phases (at full concurrency, alone).
    let under_load = match mode {
        Mode::Closed(c) => Some(c > 1),
        Mode::Open(_) => None,
    };
    let mut tasks = tokio::task::JoinSet::new();
    match mode {
        Mode::Closed(concurrency) => {
            for w in 0..concurrency {
                let (api, tokens, seeded, tally, sent) = (
                    api.clone(),
                    tokens.clone(),
                    seeded.clone(),
                    tally.clone(),
                    sent.clone(),
                );
                tasks.spawn(async move {
                    let mut rng = Rng::new(1000 + w as u64 + if search { 0 } else { 500 });
                    let (mut lat, mut errs) = (Vec::new(), Vec::new());
                    let mut turn = 0usize;
                    while Instant::now() < until && sent.fetch_add(1, Ordering::Relaxed) < max {
                        let user = if concurrency > 1 {
                            w % tokens.len()
                        } else {
                            turn % tokens.len()
                        };
                        turn += 1;
                        let (q, scope) = next_search(&mut rng, user, &seeded);
                        let r = request(
                            &api,
                            &tokens[user],
                            search,
                            &q,
                            scope.as_deref(),
                            Instant::now(),
                        )
                        .await;
                        match r {
                            Ok((t, body)) => {
                                lat.push(t);
                                if search && measured {
                                    check(
                                        &tally,
                                        &seeded,
                                        user,
                                        &q,
                                        scope.as_deref(),
                                        &body,
                                        t,
                                        under_load,
                                    );
                                }
                            }
                            Err(e) => errs.push(e),
                        }
                    }
                    (lat, errs)
                });
            }
        }
        Mode::Open(rate) => {
            let mut rng = Rng::new(3000);
            for i in 0..max {
                let at = t0 + Duration::from_secs_f64(i as f64 / rate);
                if at >= until {
                    break;
                }
                tokio::time::sleep_until(at).await;
                let user = i % tokens.len();
                let (q, scope) = next_search(&mut rng, user, seeded);
                let (api, tokens, seeded, tally) =
                    (api.clone(), tokens.clone(), seeded.clone(), tally.clone());
                tasks.spawn(async move {
                    match request(&api, &tokens[user], search, &q, scope.as_deref(), at).await {
                        Ok((t, body)) => {
                            if search && measured {
                                check(&tally, &seeded, user, &q, scope.as_deref(), &body, t, None);
                            }
                            (vec![t], Vec::new())
                        }
                        Err(e) => (Vec::new(), vec![e]),
                    }
                });
            }
        }
    }
    let (mut lat, mut errors) = (Vec::new(), BTreeMap::new());
    while let Some(r) = tasks.join_next().await {
        if let Ok((l, e)) = r {
            lat.extend(l);
            for e in e {
                *errors.entry(e).or_insert(0u64) += 1;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let m1 = metrics(&api).await;
    let (cpu1, pg1) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let gen1 = sys::cpu_ticks(std::process::id());
    let ok = lat.len();
    let per_req = |ms: f64| (ok > 0).then(|| ms / ok as f64);
    let (pg_db, _) = pg1.since(&pg0);
    let mean = match (
        metric_delta(&m0, &m1, "agentchat_knowledge_search_duration_seconds_sum"),
        metric_delta(
            &m0,
            &m1,
            "agentchat_knowledge_search_duration_seconds_count",
        ),
    ) {
        (Some(s), Some(n)) if search && n > 0.0 => Some(s / n * 1000.0),
        _ => None,
    };
    LoadPhase {
        what: if search {
            "search".into()
        } else {
            "baseline GET /api/knowledge".into()
        },
        concurrency: match mode {
            Mode::Closed(c) => c,
            Mode::Open(_) => 0,
        },
        rate_per_s: match mode {
            Mode::Open(r) => Some(r),
            Mode::Closed(_) => None,
        },
        ok,
        errors,
        secs,
        per_s: ok as f64 / secs.max(1e-3),
        latency: Dist::of(lat),
        server_cpu_ms_per_req: cpu0
            .zip(cpu1)
            .and_then(|(a, b)| per_req(b.saturating_sub(a) as f64 * 1000.0 / sys::CLK_TCK)),
        pg_backend_cpu_ms_per_req: per_req(pg_db),
        generator_cpu_ms_per_req: gen0
            .zip(gen1)
            .and_then(|(a, b)| per_req(b.saturating_sub(a) as f64 * 1000.0 / sys::CLK_TCK)),
        server_search_mean_ms: mean,
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(super) async fn run(
    cfg: &Config,
    started: &Started,
    pg: &(String, String),
    users: &Users,
    seeded: &Seeded,
) -> anyhow::Result<SearchLoad> {
    let seeded = Arc::new(Seeded {
        result: seeded.result.clone(),
        collections: seeded.collections.clone(),
        readable: seeded.readable.clone(),
        foreign: seeded.foreign.clone(),
    });
    let tally = Arc::new(Tally::default());
    let n = users.tokens.len();
    let (secs, max) = (cfg.knowledge_secs, cfg.knowledge_requests);
    // Warm-up: connections, and the index and table pages in the caches.
    let warm = (secs / 3.0).clamp(0.5, 5.0);
    phase(
        started,
        users,
        &seeded,
        &tally,
        true,
        Mode::Closed(n),
        warm,
        max,
        false,
    )
    .await;
    phase(
        started,
        users,
        &seeded,
        &tally,
        false,
        Mode::Closed(n),
        warm / 2.0,
        max,
        false,
    )
    .await;
    log(format!(
        "knowledge: search load, {n} users at once, {secs} s a phase"
    ));
    let mut phases: Vec<LoadPhase> = Vec::new();
    for (search, mode) in [
        (false, Mode::Closed(n)),
        (true, Mode::Closed(n)),
        (true, Mode::Open(0.0)),
        (true, Mode::Closed(1)),
        (false, Mode::Closed(1)),
    ] {
        // The open model runs at half of what the closed loops of searches achieved (the
        // kit's "half of saturation"): as many users, each pausing between searches.
        let mode = match mode {
            Mode::Open(_) => {
                let full = phases
                    .iter()
                    .find(|p| p.what == "search" && p.concurrency == n);
                Mode::Open((full.map_or(1.0, |p| p.per_s) / 2.0).max(0.5))
            }
            m => m,
        };
        let p = phase(
            started, users, &seeded, &tally, search, mode, secs, max, true,
        )
        .await;
        log(format!(
            "knowledge: {} {}: {} ok, {:.0}/s, p50 {} ms, p99 {} ms, errors {:?}",
            p.what,
            match mode {
                Mode::Closed(c) => format!("at {c}"),
                Mode::Open(r) => format!("at {r:.1}/s (open)"),
            },
            p.ok,
            p.per_s,
            crate::stats::f(p.latency.p50_ms, 1),
            crate::stats::f(p.latency.p99_ms, 1),
            p.errors
        ));
        phases.push(p);
    }
    let get = |search: bool, conc: usize| {
        phases
            .iter()
            .find(|p| p.concurrency == conc && p.what.starts_with("search") == search)
            .map(|p| p.latency.clone())
            .unwrap_or_default()
    };
    let (s, b, s1, b1) = (get(true, n), get(false, n), get(true, 1), get(false, 1));
    let mut picks: Vec<(String, Sample)> = Vec::new();
    let slowest = tally.slowest.lock().map(|s| s.clone()).unwrap_or_default();
    if let Some(s) = slowest.get("slowest under load") {
        picks.push((format!("slowest under load ({n} at once)"), s.clone()));
    }
    let mut alone = tally.alone.lock().map(|a| a.clone()).unwrap_or_default();
    alone.sort_by_key(|s| s.0);
    if let Some(s) = alone.get(alone.len() / 2) {
        picks.push(("median alone, unscoped".into(), s.clone()));
    }
    for (label, s) in &slowest {
        if *label != "slowest under load" {
            picks.push((label.to_string(), s.clone()));
        }
    }
    let mut out = SearchLoad {
        users: n,
        ratio_p50: ratio(s.p50_ms, b.p50_ms),
        ratio_p99: ratio(s.p99_ms, b.p99_ms),
        ratio_p50_single: ratio(s1.p50_ms, b1.p50_ms),
        ratio_p99_single: ratio(s1.p99_ms, b1.p99_ms),
        phases,
        searches: tally.searches.load(Ordering::Relaxed),
        results: tally.results.load(Ordering::Relaxed),
        empty: tally.empty.load(Ordering::Relaxed),
        empty_readable: tally.empty_readable.load(Ordering::Relaxed),
        empty_examples: tally
            .empty_examples
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default(),
        shared_results: tally.shared.load(Ordering::Relaxed),
        scoped_own: tally.scoped_own.load(Ordering::Relaxed),
        scoped_foreign: tally.scoped_foreign.load(Ordering::Relaxed),
        violations: tally.violations.load(Ordering::Relaxed),
        violation_examples: tally.examples.lock().map(|e| e.clone()).unwrap_or_default(),
        explains: Vec::new(),
    };
    for (label, (t, user, q, scope)) in picks {
        let mut e = Explained {
            label,
            api_ms: t as f64 / 1000.0,
            query: format!(
                "user {user} q={q:?} collection={}",
                scope.as_deref().unwrap_or("none")
            ),
            ..Default::default()
        };
        match super::explain::explain(pg, &started.db, &users.ids[user], &q, scope.as_deref()) {
            Ok(plan) => {
                let time = |what: &str| {
                    plan.lines()
                        .find_map(|l| l.trim().strip_prefix(what))
                        .and_then(|v| v.trim().trim_end_matches(" ms").parse().ok())
                };
                e.planning_ms = time("Planning Time:");
                e.execution_ms = time("Execution Time:");
                e.plan = Some(plan);
            }
            Err(err) => e.error = Some(format!("{err:#}")),
        }
        out.explains.push(e);
    }
    Ok(out)
}
