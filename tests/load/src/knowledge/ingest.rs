//! Ingestion throughput: one user uploads generated files (`PUT
//! /api/collections/{id}/files/{name}`, as many at once as the server's per-user upload
//! slots allow, a 429 retried after 10 ms) and the kit polls the collection every 100 ms
//! until every file is `ready` (or `failed`). Reported: files/s, chunks/s and MiB/s over the
//! whole (first upload sent → last file seen ready), each file's time from its 202 to
//! ready, and the server's own embedder time (`agentchat_knowledge_embed_duration_seconds`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::corpus::{self, Rng};
use crate::bench::{log, Config, Started};
use crate::client::{us, Api};
use crate::stats::Dist;
use crate::sys;

/// Uploads in flight (the server's default `security.max_concurrent_uploads_per_user`).
const UPLOADERS: usize = 2;
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestResult {
    /// The embedding model and how it is reached.
    pub via: String,
    pub collection_id: String,
    pub files: usize,
    pub markdown_files: usize,
    pub bytes: u64,
    pub ready: usize,
    pub failed: usize,
    /// Upload refusals and file errors, by kind.
    pub errors: BTreeMap<String, u64>,
    pub chunks: u64,
    /// 429s (the user's upload slots busy), each retried.
    pub upload_retries: u64,
    /// First upload sent → last upload accepted.
    pub upload_secs: f64,
    /// First upload sent → every file ready.
    pub wall_secs: f64,
    /// Last upload accepted → every file ready.
    pub drain_secs: f64,
    pub files_per_s: f64,
    pub chunks_per_s: f64,
    pub mib_per_s: f64,
    /// One upload request (the body sent → 202).
    pub upload: Dist,
    /// A file's 202 → the first poll that saw it ready (100 ms polls).
    pub file_ready: Dist,
    /// From `/metrics`: embedding requests, the embedder's summed time, tokens, chunks.
    pub embed_requests: Option<f64>,
    pub embed_secs: Option<f64>,
    pub embedding_tokens: Option<f64>,
    pub chunks_stored_metric: Option<f64>,
    pub server_cpu_ms: Option<f64>,
    pub pg_backend_cpu_ms: Option<f64>,
    pub pg_all_cpu_ms: Option<f64>,
    pub timed_out: bool,
    /// The fake upstream's `/v1/embeddings` counters (the upstream run).
    pub upstream: Option<Value>,
}

/// The files to upload: `--knowledge-files` of them, 3 KiB to `--knowledge-max-kib`
/// (log-uniform), seven in ten Markdown, the rest plain text. The same in every run.
pub fn files(cfg: &Config) -> Vec<(String, String)> {
    let mut rng = Rng::new(42);
    let (lo, hi) = (3.0 * 1024.0f64, cfg.knowledge_max_kib as f64 * 1024.0);
    (0..cfg.knowledge_files)
        .map(|i| {
            let size = (lo.ln() + rng.unit() * (hi.ln() - lo.ln())).exp() as usize;
            let markdown = rng.unit() < 0.7;
            let body = corpus::document(&mut rng, size, markdown);
            let name = format!("doc-{i:04}.{}", if markdown { "md" } else { "txt" });
            (name, body)
        })
        .collect()
}

pub(super) async fn create_collection(
    api: &Api,
    token: &str,
    name: &str,
) -> anyhow::Result<String> {
    let r = api
        .http
        .post(format!("{}/api/collections", api.base))
        .bearer_auth(token)
        .json(&json!({"name": name, "description": "load kit"}))
        .timeout(Duration::from_secs(30))
        .send()
        .await?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or_default();
    if status.as_u16() != 201 {
        bail!("POST /api/collections: HTTP {status}: {v}");
    }
    v["id"]
        .as_str()
        .map(str::to_owned)
        .context("collection: no id")
}

pub(super) async fn delete_collection(api: &Api, token: &str, id: &str) -> anyhow::Result<()> {
    let r = api
        .http
        .delete(format!("{}/api/collections/{id}", api.base))
        .bearer_auth(token)
        .timeout(Duration::from_secs(120))
        .send()
        .await?;
    anyhow::ensure!(
        r.status().is_success(),
        "DELETE /api/collections/{id}: HTTP {}",
        r.status()
    );
    Ok(())
}

/// Metrics summed from `/metrics` (no token: the kit's server sets none).
pub(super) async fn metrics(api: &Api) -> Option<crate::probe::Scrape> {
    let text = api
        .http
        .get(format!("{}/metrics", api.base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    Some(crate::probe::parse(&text))
}

pub(super) fn metric_delta(
    a: &Option<crate::probe::Scrape>,
    b: &Option<crate::probe::Scrape>,
    name: &str,
) -> Option<f64> {
    Some(b.as_ref()?.get(name)? - a.as_ref()?.get(name).unwrap_or(0.0))
}

/// One accepted upload.
struct Accepted {
    id: String,
    at: Instant,
}

#[derive(Default)]
struct Uploads {
    accepted: Mutex<Vec<Accepted>>,
    latencies: Mutex<Vec<u64>>,
    errors: Mutex<Vec<String>>,
    retries: AtomicU64,
    done: AtomicUsize,
}

async fn upload_all(
    api: Api,
    token: String,
    collection: String,
    files: Arc<Vec<(String, String)>>,
    u: Arc<Uploads>,
) {
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..UPLOADERS)
        .map(|_| {
            let (api, token, collection, files, u, next) = (
                api.clone(),
                token.clone(),
                collection.clone(),
                files.clone(),
                u.clone(),
                next.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name, body)) = files.get(i) else {
                        break;
                    };
                    let mut tries = 0;
                    let outcome = loop {
                        tries += 1;
                        let t = Instant::now();
                        let r = api
                            .http
                            .put(format!(
                                "{}/api/collections/{collection}/files/{name}",
                                api.base
                            ))
                            .bearer_auth(&token)
                            .header("content-type", "application/octet-stream")
                            .body(body.clone())
                            .timeout(Duration::from_secs(60))
                            .send()
                            .await;
                        match r {
                            Ok(r) if r.status().as_u16() == 202 => {
                                let at = Instant::now();
                                let v: Value = r.json().await.unwrap_or_default();
                                if let Ok(mut l) = u.latencies.lock() {
                                    l.push(us(at - t));
                                }
                                break v["id"]
                                    .as_str()
                                    .map(|id| (id.to_owned(), at))
                                    .ok_or("202 without an id".to_owned());
                            }
                            Ok(r) if r.status().as_u16() == 429 && tries < 6000 => {
                                u.retries.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                            Ok(r) => break Err(format!("upload HTTP {}", r.status().as_u16())),
                            Err(e) => break Err(format!("upload: {e}")),
                        }
                    };
                    match outcome {
                        Ok((id, at)) => {
                            if let Ok(mut a) = u.accepted.lock() {
                                a.push(Accepted { id, at });
                            }
                        }
                        Err(e) => {
                            if let Ok(mut errs) = u.errors.lock() {
                                errs.push(e);
                            }
                        }
                    }
                    u.done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.await;
    }
}

/// The collection's files: id → (state, chunks, error).
async fn file_states(
    api: &Api,
    token: &str,
    collection: &str,
) -> anyhow::Result<HashMap<String, (String, u64, Option<String>)>> {
    let v: Value = api
        .http
        .get(format!("{}/api/collections/{collection}", api.base))
        .bearer_auth(token)
        .timeout(Duration::from_secs(30))
        .send()
        .await?
        .json()
        .await?;
    Ok(v["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .filter_map(|f| {
                    Some((
                        f["id"].as_str()?.to_owned(),
                        (
                            f["state"].as_str()?.to_owned(),
                            f["chunks"].as_u64().unwrap_or(0),
                            f["error"].as_str().map(str::to_owned),
                        ),
                    ))
                })
                .collect()
        })
        .unwrap_or_default())
}

pub(super) async fn ingest(
    cfg: &Config,
    started: &Started,
    _pg: &(String, String),
    token: &str,
    files: &[(String, String)],
    via: &str,
) -> anyhow::Result<IngestResult> {
    let api = &started.api;
    let collection = create_collection(api, token, "load ingest").await?;
    let files = Arc::new(files.to_vec());
    let bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    log(format!(
        "knowledge: ingesting {} files ({:.1} MiB) with {via}",
        files.len(),
        bytes as f64 / 1_048_576.0
    ));
    let m0 = metrics(api).await;
    let (cpu0, pg0) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let u = Arc::new(Uploads::default());
    let t0 = Instant::now();
    let uploader = tokio::spawn(upload_all(
        api.clone(),
        token.to_owned(),
        collection.clone(),
        files.clone(),
        u.clone(),
    ));
    let limit = Duration::from_secs(if cfg.smoke {
        60
    } else {
        (files.len() as u64 * 5).clamp(120, 1800)
    });
    let mut ready_at: HashMap<String, Instant> = HashMap::new();
    let mut last: HashMap<String, (String, u64, Option<String>)> = HashMap::new();
    let mut timed_out = false;
    let mut uploads_done_at = None;
    loop {
        tokio::time::sleep(POLL).await;
        let now = Instant::now();
        if let Ok(states) = file_states(api, token, &collection).await {
            for (id, (state, _, _)) in &states {
                if (state == "ready" || state == "failed") && !ready_at.contains_key(id) {
                    ready_at.insert(id.clone(), now);
                }
            }
            last = states;
        }
        let done = u.done.load(Ordering::Relaxed) == files.len();
        if done && uploads_done_at.is_none() {
            uploads_done_at = Some(
                u.accepted
                    .lock()
                    .ok()
                    .and_then(|a| a.iter().map(|x| x.at).max())
                    .unwrap_or(now),
            );
        }
        let accepted: Vec<String> = u
            .accepted
            .lock()
            .map(|a| a.iter().map(|x| x.id.clone()).collect())
            .unwrap_or_default();
        if done && accepted.iter().all(|id| ready_at.contains_key(id)) {
            break;
        }
        if t0.elapsed() > limit {
            timed_out = true;
            break;
        }
    }
    let end = ready_at
        .values()
        .max()
        .copied()
        .unwrap_or_else(Instant::now);
    uploader.abort();
    let m1 = metrics(api).await;
    let (cpu1, pg1) = (sys::cpu_ticks(started.server_pid), sys::pg_cpu(&started.db));
    let accepted = u
        .accepted
        .lock()
        .map(|a| a.iter().map(|x| (x.id.clone(), x.at)).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for e in u.errors.lock().map(|e| e.clone()).unwrap_or_default() {
        *errors.entry(e).or_insert(0) += 1;
    }
    let (mut ready, mut failed, mut chunks) = (0, 0, 0);
    for (id, _) in &accepted {
        match last.get(id) {
            Some((s, n, _)) if s == "ready" => {
                ready += 1;
                chunks += n;
            }
            Some((s, _, e)) if s == "failed" => {
                failed += 1;
                *errors
                    .entry(format!("file failed: {}", e.as_deref().unwrap_or("?")))
                    .or_insert(0) += 1;
            }
            Some((s, _, _)) => *errors.entry(format!("still {s} at the end")).or_insert(0) += 1,
            None => *errors.entry("not listed".into()).or_insert(0) += 1,
        }
    }
    let file_ready = Dist::of(
        accepted
            .iter()
            .filter_map(|(id, at)| {
                ready_at
                    .get(id)
                    .map(|r| us(r.saturating_duration_since(*at)))
            })
            .collect(),
    );
    let wall = end.saturating_duration_since(t0).as_secs_f64().max(1e-3);
    let up_end = uploads_done_at.unwrap_or(end);
    let (pg_db, pg_all) = pg1.since(&pg0);
    let r = IngestResult {
        via: via.to_owned(),
        collection_id: collection,
        files: files.len(),
        markdown_files: files.iter().filter(|(n, _)| n.ends_with(".md")).count(),
        bytes,
        ready,
        failed,
        errors,
        chunks,
        upload_retries: u.retries.load(Ordering::Relaxed),
        upload_secs: up_end.saturating_duration_since(t0).as_secs_f64(),
        wall_secs: wall,
        drain_secs: end.saturating_duration_since(up_end).as_secs_f64(),
        files_per_s: ready as f64 / wall,
        chunks_per_s: chunks as f64 / wall,
        mib_per_s: bytes as f64 / 1_048_576.0 / wall,
        upload: Dist::of(u.latencies.lock().map(|l| l.clone()).unwrap_or_default()),
        file_ready,
        embed_requests: metric_delta(&m0, &m1, "agentchat_knowledge_embed_duration_seconds_count"),
        embed_secs: metric_delta(&m0, &m1, "agentchat_knowledge_embed_duration_seconds_sum"),
        embedding_tokens: metric_delta(&m0, &m1, "agentchat_knowledge_embedding_tokens_total"),
        chunks_stored_metric: metric_delta(&m0, &m1, "agentchat_knowledge_chunks_total"),
        server_cpu_ms: cpu0
            .zip(cpu1)
            .map(|(a, b)| b.saturating_sub(a) as f64 * 1000.0 / sys::CLK_TCK),
        pg_backend_cpu_ms: Some(pg_db),
        pg_all_cpu_ms: Some(pg_all),
        timed_out,
        upstream: None,
    };
    log(format!(
        "knowledge: {} of {} files ready ({} failed) in {:.1} s: {:.1} files/s, {} chunks, {:.0} chunks/s{}",
        r.ready,
        r.files,
        r.failed,
        r.wall_secs,
        r.files_per_s,
        r.chunks,
        r.chunks_per_s,
        if timed_out { " (TIMED OUT)" } else { "" }
    ));
    Ok(r)
}
