//! Search latency: every user at once, each a closed loop of `GET /api/knowledge/search`
//! (generated two- or three-word queries, `k=5`; one in twenty scoped to the user's own
//! collection, one in twenty to a collection they may not read), against the same loops of
//! a trivial authenticated GET (`/api/knowledge`: the token check and its one query, no
//! search) in the same run; then both again one request at a time (what a search costs when
//! nothing queues). Each phase is bounded by `--knowledge-secs` and
//! `--knowledge-requests`. Every result is checked against what the kit granted its user:
//! a chunk of a collection they may not read (or, scoped, of another collection) is a
//! violation. The server's statement is run once more under `EXPLAIN (ANALYZE, BUFFERS)`
//! with the slowest search's parameters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::corpus::{self, Rng};
use super::ingest::{metric_delta, metrics};
use super::seed::Seeded;
use super::{corpus_dims, Users};
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
    pub concurrency: usize,
    pub ok: usize,
    pub errors: BTreeMap<String, u64>,
    pub secs: f64,
    pub per_s: f64,
    pub latency: Dist,
    pub server_cpu_ms_per_req: Option<f64>,
    pub pg_backend_cpu_ms_per_req: Option<f64>,
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
    /// Results from a collection shared with the user's role (grants at work).
    pub shared_results: u64,
    pub scoped_own: u64,
    pub scoped_foreign: u64,
    /// Results outside what the user may read (or outside the scope asked for).
    pub violations: u64,
    pub violation_examples: Vec<String>,
    /// The slowest search at full concurrency, and its plan run alone.
    pub slowest_ms: Option<f64>,
    pub slowest_query: Option<String>,
    pub explain: Option<String>,
    pub explain_error: Option<String>,
}

#[derive(Default)]
struct Tally {
    searches: AtomicU64,
    results: AtomicU64,
    empty: AtomicU64,
    shared: AtomicU64,
    scoped_own: AtomicU64,
    scoped_foreign: AtomicU64,
    violations: AtomicU64,
    examples: Mutex<Vec<String>>,
    slowest: Mutex<Option<(u64, usize, String, Option<String>)>>,
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

#[allow(clippy::too_many_arguments)]
async fn phase(
    started: &Started,
    users: &Users,
    seeded: &Arc<Seeded>,
    tally: &Arc<Tally>,
    search: bool,
    concurrency: usize,
    secs: f64,
    max: usize,
    measured: bool,
) -> LoadPhase {
    let api = started.api.clone();
    let m0 = metrics(&api).await;
    let (cpu0, pg0) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let t0 = Instant::now();
    let until = t0 + Duration::from_secs_f64(secs);
    let sent = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(users.tokens.clone());
    let loops: Vec<_> = (0..concurrency)
        .map(|w| {
            let (api, tokens, seeded, tally, sent) =
                (api.clone(), tokens.clone(), seeded.clone(), tally.clone(), sent.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(1000 + w as u64 + if search { 0 } else { 500 });
                let (mut lat, mut errs) = (Vec::new(), Vec::new());
                let mut turn = 0usize;
                while Instant::now() < until && sent.fetch_add(1, Ordering::Relaxed) < max {
                    // At full concurrency worker w is user w; one at a time, users take turns.
                    let user = if concurrency > 1 { w % tokens.len() } else { turn % tokens.len() };
                    turn += 1;
                    let (q, scope) = next_search(&mut rng, user, &seeded);
                    let mut rb = if search {
                        let mut query = vec![("q", q.clone()), ("k", "5".to_owned())];
                        if let Some(s) = &scope {
                            query.push(("collection", s.clone()));
                        }
                        api.http.get(format!("{}/api/knowledge/search", api.base)).query(&query)
                    } else {
                        api.http.get(format!("{}/api/knowledge", api.base))
                    };
                    rb = rb.bearer_auth(&tokens[user]).timeout(TIMEOUT);
                    let t = Instant::now();
                    let body = match rb.send().await {
                        Ok(r) if r.status().is_success() => r.bytes().await.map_err(|e| format!("body: {e}")),
                        Ok(r) => Err(format!("HTTP {}", r.status().as_u16())),
                        Err(e) if e.is_timeout() => Err("timeout".into()),
                        Err(_) => Err("request".into()),
                    };
                    let elapsed = us(t.elapsed());
                    let body = match body {
                        Ok(b) => b,
                        Err(e) => {
                            errs.push(e);
                            continue;
                        }
                    };
                    lat.push(elapsed);
                    if search && measured {
                        check(&tally, &seeded, user, &q, scope.as_deref(), &body, elapsed, concurrency);
                    }
                }
                (lat, errs)
            })
        })
        .collect();
    let (mut lat, mut errors) = (Vec::new(), BTreeMap::new());
    for l in loops {
        if let Ok((l, e)) = l.await {
            lat.extend(l);
            for e in e {
                *errors.entry(e).or_insert(0u64) += 1;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let m1 = metrics(&api).await;
    let (cpu1, pg1) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let ok = lat.len();
    let per_req = |ms: f64| (ok > 0).then(|| ms / ok as f64);
    let (pg_db, _) = pg1.since(&pg0);
    let mean = match (
        metric_delta(&m0, &m1, "agentchat_knowledge_search_duration_seconds_sum"),
        metric_delta(&m0, &m1, "agentchat_knowledge_search_duration_seconds_count"),
    ) {
        (Some(s), Some(n)) if search && n > 0.0 => Some(s / n * 1000.0),
        _ => None,
    };
    LoadPhase {
        what: if search { "search".into() } else { "baseline GET /api/knowledge".into() },
        concurrency,
        ok,
        errors,
        secs,
        per_s: ok as f64 / secs.max(1e-3),
        latency: Dist::of(lat),
        server_cpu_ms_per_req: cpu0
            .zip(cpu1)
            .and_then(|(a, b)| per_req(b.saturating_sub(a) as f64 * 1000.0 / sys::CLK_TCK)),
        pg_backend_cpu_ms_per_req: per_req(pg_db),
        server_search_mean_ms: mean,
    }
}

/// Checks one answer's results against what `user` may read.
#[allow(clippy::too_many_arguments)]
fn check(
    tally: &Tally,
    seeded: &Seeded,
    user: usize,
    q: &str,
    scope: Option<&str>,
    body: &[u8],
    elapsed_us: u64,
    concurrency: usize,
) {
    tally.searches.fetch_add(1, Ordering::Relaxed);
    let results: Vec<Value> = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("results").and_then(Value::as_array).cloned())
        .unwrap_or_default();
    match scope {
        Some(s) if seeded.readable[user].contains(s) => tally.scoped_own.fetch_add(1, Ordering::Relaxed),
        Some(_) => tally.scoped_foreign.fetch_add(1, Ordering::Relaxed),
        None => 0,
    };
    if results.is_empty() {
        tally.empty.fetch_add(1, Ordering::Relaxed);
    }
    tally.results.fetch_add(results.len() as u64, Ordering::Relaxed);
    for r in &results {
        let c = r.get("collection_id").and_then(Value::as_str).unwrap_or("");
        let wrong = !seeded.readable[user].contains(c) || scope.is_some_and(|s| s != c);
        if wrong {
            tally.violations.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut ex) = tally.examples.lock() {
                if ex.len() < 5 {
                    ex.push(format!("user {user}, q {q:?}, scope {scope:?}: a chunk of collection {c}"));
                }
            }
        } else if seeded.collections[user].id != c {
            tally.shared.fetch_add(1, Ordering::Relaxed);
        }
    }
    if concurrency > 1 {
        if let Ok(mut s) = tally.slowest.lock() {
            if s.as_ref().is_none_or(|(t, ..)| elapsed_us > *t) {
                *s = Some((elapsed_us, user, q.to_owned(), scope.map(str::to_owned)));
            }
        }
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
    phase(started, users, &seeded, &tally, true, n, warm, max, false).await;
    phase(started, users, &seeded, &tally, false, n, warm / 2.0, max, false).await;
    log(format!("knowledge: search load, {n} users at once, {secs} s a phase"));
    let mut phases = Vec::new();
    for (search, conc) in [(false, n), (true, n), (true, 1), (false, 1)] {
        let p = phase(started, users, &seeded, &tally, search, conc, secs, max, true).await;
        log(format!(
            "knowledge: {} at {}: {} ok, {:.0}/s, p50 {} ms, p99 {} ms, errors {:?}",
            p.what,
            conc,
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
    let slowest = tally.slowest.lock().ok().and_then(|s| s.clone());
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
        shared_results: tally.shared.load(Ordering::Relaxed),
        scoped_own: tally.scoped_own.load(Ordering::Relaxed),
        scoped_foreign: tally.scoped_foreign.load(Ordering::Relaxed),
        violations: tally.violations.load(Ordering::Relaxed),
        violation_examples: tally.examples.lock().map(|e| e.clone()).unwrap_or_default(),
        slowest_ms: slowest.as_ref().map(|s| s.0 as f64 / 1000.0),
        slowest_query: slowest.as_ref().map(|s| format!("user {} q={:?} collection={:?}", s.1, s.2, s.3)),
        ..Default::default()
    };
    if let Some((_, user, q, scope)) = slowest {
        match explain(pg, &started.db, &users.ids[user], &q, scope.as_deref()) {
            Ok(plan) => out.explain = Some(plan),
            Err(e) => out.explain_error = Some(format!("{e:#}")),
        }
    }
    Ok(out)
}

fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The server's search statement (`server/src/knowledge/search.rs`, `statement()`, with
/// its parameters written in, the caller's collection test `READABLE_BY_1` of
/// `collections.rs`, and the two settings the server sets for its transaction) under
/// `EXPLAIN (ANALYZE, BUFFERS)`. A copy: keep it in step with the server's.
fn explain(pg: &(String, String), db: &str, user: &str, q: &str, scope: Option<&str>) -> anyhow::Result<String> {
    let dims = corpus_dims();
    let vector = corpus::vector_text(&corpus::demo_embed(q, dims));
    let only = match scope {
        Some(s) => format!("ARRAY[{}]::uuid[]", lit(s)),
        None => "ARRAY[]::uuid[]".into(),
    };
    let (u, v, qq) = (format!("{}::uuid", lit(user)), lit(&vector), lit(q));
    let sql = format!(
        "BEGIN; SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 100; \
         EXPLAIN (ANALYZE, BUFFERS) \
         WITH granted AS MATERIALIZED ( \
           SELECT c.id, c.name FROM collections c \
            WHERE (c.owner_id = {u} OR EXISTS (SELECT 1 FROM collection_grants g \
                   JOIN users u ON u.role = g.role WHERE g.collection_id = c.id AND u.id = {u})) \
              AND (cardinality({only}) = 0 OR c.id = ANY({only}))), \
         vec AS MATERIALIZED ( \
           SELECT v.id, row_number() OVER (ORDER BY v.distance) AS r FROM ( \
             SELECT ch.id, (ch.embedding::vector({dims})) <=> {v}::vector({dims}) AS distance \
               FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = 'demo-embed' \
                AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY (ch.embedding::vector({dims})) <=> {v}::vector({dims}) \
              LIMIT 40) v), \
         txt AS MATERIALIZED ( \
           SELECT t.id, row_number() OVER (ORDER BY t.rank DESC, t.id) AS r FROM ( \
             SELECT ch.id, ts_rank_cd(ch.tsv, q) AS rank \
               FROM chunks ch, websearch_to_tsquery('english', {qq}) q \
              WHERE ch.tsv @@ q AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY rank DESC LIMIT 40) t), \
         fused AS ( \
           SELECT id, sum(1.0 / (60 + r))::float8 AS score \
             FROM (SELECT id, r FROM vec UNION ALL SELECT id, r FROM txt) x \
            GROUP BY id ORDER BY score DESC, id LIMIT 5) \
         SELECT ch.id AS chunk_id, ch.document_id, ch.collection_id, d.name AS file, \
                g.name AS collection, ch.byte_start, ch.byte_end, ch.text, f.score \
           FROM fused f JOIN chunks ch ON ch.id = f.id \
           JOIN documents d ON d.id = ch.document_id \
           JOIN granted g ON g.id = ch.collection_id \
          ORDER BY f.score DESC, ch.id; ROLLBACK;"
    );
    let out = std::process::Command::new("psql")
        .args(["-h", &pg.0, "-p", &pg.1, "-U", "postgres", "-d", db, "-XAtq", "-c", &sql])
        .output()?;
    anyhow::ensure!(out.status.success(), "EXPLAIN failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
