//! Knowledge scenarios (`--knowledge`, and small ones in every smoke run), on a server of
//! their own whose database (created and dropped like the chat run's) is on a Postgres
//! with pgvector: `--pgvector-url` / `AGENTCHAT_PGVECTOR_URL`, else the cluster
//! `tests/pgvector/start.sh` starts (127.0.0.1:5433) and prints.
//!
//! * `ingest` — one user uploads generated Markdown and text files through the API and the
//!   kit polls until every one is `ready`: files/s, chunks/s, the embedder's own time. With
//!   the built-in `demo-embed`, and again (a second server, a fresh database) through the
//!   fake upstream's `/v1/embeddings` (`--no-knowledge-upstream` skips that).
//! * `seed` — collections per user (and shared ones) made through the API, their chunks
//!   written with SQL: demo-embed vectors of generated text.
//! * `load` — `GET /api/knowledge/search` by every user at once against a trivial
//!   authenticated GET at the same concurrency; every result checked against what its user
//!   may read.
//! * `explain` — the server's statement under `EXPLAIN (ANALYZE, BUFFERS)`;
//! * `corpus`, `vocab` — the generated text, queries and demo-embed vectors;
//! * `report` — the markdown section and what makes the kit fail.

pub mod corpus;
mod explain;
mod ingest;
mod load;
pub mod report;
mod seed;
mod verify;
mod vocab;

use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::bench::{log, start_on, Config, Started, Target};
use crate::client::Api;
use crate::sys;

pub use ingest::IngestResult;
pub use load::SearchLoad;
pub use seed::SeedResult;

/// The model of the second ingestion run: the fake upstream's `/v1/embeddings`, named in
/// `AGENTCHAT_EMBEDDING_MODELS` on the `[llm]` provider (`default`).
const UPSTREAM_MODEL: &str = "load-embed";

#[derive(Debug, Clone, Default, Serialize)]
pub struct KnowledgeResult {
    /// Why the scenarios could not run (the kit fails).
    pub error: Option<String>,
    pub pgvector_url: String,
    pub postgres_version: String,
    pub pgvector_version: String,
    pub shared_buffers: String,
    pub setup_secs: f64,
    pub ingest: Option<IngestResult>,
    /// The same files through the fake upstream's `/v1/embeddings`.
    pub ingest_upstream: Option<IngestResult>,
    /// The kit's demo-embed against the vectors the server stored for ingested chunks.
    pub embed_check: Option<EmbedCheck>,
    pub seed: Option<SeedResult>,
    pub search: Option<SearchLoad>,
    pub wall_secs: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct EmbedCheck {
    pub chunks: usize,
    /// Lowest cosine between the server's vector of a chunk and the kit's (1 = the same).
    pub min_cosine: f64,
}

/// The users of a knowledge server: tokens and ids, the first one admin.
pub(crate) struct Users {
    pub tokens: Vec<String>,
    pub ids: Vec<String>,
}

/// Host and port of a `postgres://user@host:port/...` URL (user `postgres`, trust auth).
fn host_port(url: &str) -> anyhow::Result<(String, String)> {
    let rest = url
        .trim()
        .strip_prefix("postgres://")
        .or_else(|| url.trim().strip_prefix("postgresql://"))
        .context("not a postgres:// URL")?;
    let rest = rest.split(['/', '?']).next().unwrap_or("");
    let (user, hostport) = rest.rsplit_once('@').unwrap_or(("postgres", rest));
    anyhow::ensure!(
        user == "postgres",
        "the kit connects as user postgres (trust authentication), not {user}"
    );
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "5432"));
    Ok((host.to_owned(), port.to_owned()))
}

/// The pgvector cluster's URL: the configured one, else what `tests/pgvector/start.sh`
/// prints last (it installs and starts the cluster if needed; idempotent).
async fn pgvector_url(cfg: &Config) -> anyhow::Result<String> {
    if let Some(u) = &cfg.pgvector_url {
        return Ok(u.clone());
    }
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pgvector/start.sh");
    log(format!(
        "knowledge: {} (a Postgres with pgvector)",
        script.display()
    ));
    let out = tokio::time::timeout(
        Duration::from_secs(900),
        tokio::process::Command::new("bash")
            .arg(&script)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output(),
    )
    .await
    .context("tests/pgvector/start.sh took over 15 minutes")??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("tests/pgvector/start.sh failed ({}): {stdout}", out.status);
    }
    stdout
        .lines()
        .last()
        .map(|l| l.trim().to_owned())
        .filter(|l| l.starts_with("postgres"))
        .context("tests/pgvector/start.sh printed no URL")
}

pub async fn run(cfg: &Config) -> KnowledgeResult {
    let t = Instant::now();
    let mut r = KnowledgeResult::default();
    if let Err(e) = scenarios(cfg, &mut r).await {
        log(format!("knowledge: FAILED: {e:#}"));
        r.error = Some(format!("{e:#}"));
    }
    r.wall_secs = t.elapsed().as_secs_f64();
    r
}

/// Starts a server on the pgvector cluster (a fresh database; the returned `Started` drops
/// it) and checks that collections are on.
async fn server(
    cfg: &Config,
    pg: &(String, String),
    log_name: &str,
    env: Vec<(String, String)>,
) -> anyhow::Result<Started> {
    let started = start_on(
        cfg,
        Target {
            pg_host: pg.0.clone(),
            pg_port: pg.1.clone(),
            log_name: log_name.into(),
            env,
        },
    )
    .await?;
    Ok(started)
}

/// Registers `n` users (the first becomes admin), logs them in, and gives both roles a
/// budget large enough never to run out (every embedding batch takes a real reservation).
async fn register(api: &Api, n: usize) -> anyhow::Result<Users> {
    let password = "load-test-password-1";
    let mut tokens = Vec::new();
    api.register("load_user_0", password).await?;
    tokens.push(api.login("load_user_0", password).await?);
    let rest: Vec<usize> = (1..n).collect();
    for pair in rest.chunks(2) {
        let hs: Vec<_> = pair
            .iter()
            .map(|&i| {
                let api = api.clone();
                tokio::spawn(async move {
                    let name = format!("load_user_{i}");
                    api.register(&name, password).await?;
                    api.login(&name, password).await
                })
            })
            .collect();
        for h in hs {
            tokens.push(h.await??);
        }
    }
    let admin = &tokens[0];
    let v = api
        .http
        .get(format!("{}/api/knowledge", api.base))
        .bearer_auth(admin)
        .timeout(Duration::from_secs(10))
        .send()
        .await?
        .json::<Value>()
        .await?;
    if v["available"] != json!(true) {
        bail!(
            "the server says knowledge collections are off on the pgvector cluster: {}",
            v["reason"]
        );
    }
    for role in ["admin", "member"] {
        put_role(api, admin, role, Some(1_000_000_000_000)).await?;
    }
    let by_name: std::collections::HashMap<String, String> =
        api.users(admin).await?.into_iter().collect();
    let ids = (0..n)
        .map(|i| {
            by_name
                .get(&format!("load_user_{i}"))
                .cloned()
                .with_context(|| format!("no id for load_user_{i}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Users { tokens, ids })
}

/// Creates or replaces a role with the tools knowledge needs and a token budget (`None`: a
/// role without one).
pub(crate) async fn put_role(
    api: &Api,
    admin: &str,
    role: &str,
    budget: Option<i64>,
) -> anyhow::Result<()> {
    let mut body = json!({"tools": ["current_time", "calculator", "search_knowledge"]});
    if let Some(b) = budget {
        body["token_budget"] = json!(b);
        body["budget_period"] = json!("month");
    }
    let r = api
        .http
        .put(format!("{}/api/admin/roles/{role}", api.base))
        .bearer_auth(admin)
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await?;
    let status = r.status();
    if !status.is_success() {
        bail!(
            "PUT /api/admin/roles/{role}: HTTP {status}: {}",
            r.text().await.unwrap_or_default()
        );
    }
    Ok(())
}

async fn scenarios(cfg: &Config, r: &mut KnowledgeResult) -> anyhow::Result<()> {
    let t = Instant::now();
    r.pgvector_url = pgvector_url(cfg).await?;
    let pg = host_port(&r.pgvector_url)?;
    r.postgres_version = sys::psql(&pg.0, &pg.1, "SHOW server_version")
        .context("the pgvector cluster does not answer")?;
    r.shared_buffers = sys::psql(&pg.0, &pg.1, "SHOW shared_buffers").unwrap_or_default();
    log(format!(
        "knowledge: pgvector cluster {} (PostgreSQL {}, shared_buffers {})",
        r.pgvector_url, r.postgres_version, r.shared_buffers
    ));

    // The demo embedder: ingestion, then the search corpus and the search load.
    let started = server(cfg, &pg, "server-knowledge.log", Vec::new()).await?;
    r.pgvector_version = sys::psql_in(
        &pg.0,
        &pg.1,
        &started.db,
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
    )
    .unwrap_or_default();
    let users = register(&started.api, cfg.knowledge_users).await?;
    r.setup_secs = t.elapsed().as_secs_f64();
    log(format!(
        "knowledge: server ready on {}, database {}, pgvector {}, {} users, in {:.1} s",
        started.api.base,
        started.db,
        r.pgvector_version,
        users.tokens.len(),
        r.setup_secs
    ));
    let files = ingest::files(cfg);
    let ing = ingest::ingest(
        cfg,
        &started,
        &pg,
        &users.tokens[1],
        &files,
        "demo-embed (built in)",
    )
    .await?;
    let collection = ing.collection_id.clone();
    r.ingest = Some(ing);
    r.embed_check = Some(embed_check(&pg, &started.db, &collection)?);
    // The search corpus is exactly the seeded chunks: the ingested collection goes.
    ingest::delete_collection(&started.api, &users.tokens[1], &collection).await?;
    let seeded = seed::seed(cfg, &started, &pg, &users).await?;
    r.search = Some(load::run(cfg, &started, &pg, &users, &seeded).await?);
    r.seed = Some(seeded.result);
    drop(started); // the server stops, its database is dropped

    if cfg.knowledge_upstream {
        let fake_model = format!("embed:delay={},dims={}", cfg.embed_delay_ms, corpus_dims());
        let models = json!([{
            "name": UPSTREAM_MODEL, "provider": "default", "upstream_model": fake_model,
            "dimensions": corpus_dims(),
        }]);
        let env = vec![
            ("AGENTCHAT_EMBEDDING_MODELS".to_owned(), models.to_string()),
            (
                "AGENTCHAT_KNOWLEDGE_EMBEDDING_MODEL".to_owned(),
                UPSTREAM_MODEL.to_owned(),
            ),
        ];
        let started = server(cfg, &pg, "server-knowledge-upstream.log", env).await?;
        let users = register(&started.api, 2).await?;
        let via = format!(
            "{UPSTREAM_MODEL}: the fake upstream's /v1/embeddings ({} ms per request)",
            cfg.embed_delay_ms
        );
        let mut ing = ingest::ingest(cfg, &started, &pg, &users.tokens[1], &files, &via).await?;
        ing.upstream = fake_embed_stats(&started).await;
        r.ingest_upstream = Some(ing);
    }
    Ok(())
}

/// Length of the demo embedder's vectors (the seeded chunks' and the fake upstream's).
pub const fn corpus_dims() -> usize {
    256
}

/// What the fake upstream's `/v1/embeddings` served.
async fn fake_embed_stats(started: &Started) -> Option<Value> {
    let v: Value = reqwest::Client::new()
        .get(format!("{}/control/stats", started.fake_base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    v.get("embeddings").cloned()
}

/// Compares the server's stored vectors of a few ingested chunks with the kit's demo-embed
/// of their text: the seeded chunks' vectors are only "what the server would store" if the
/// two agree.
fn embed_check(pg: &(String, String), db: &str, collection: &str) -> anyhow::Result<EmbedCheck> {
    let rows = sys::psql_in(
        &pg.0,
        &pg.1,
        db,
        &format!(
            "SELECT coalesce(json_agg(json_build_object('t', text, 'e', embedding::text)), '[]') \
               FROM (SELECT text, embedding FROM chunks WHERE collection_id = '{collection}' \
                       AND embedding IS NOT NULL ORDER BY id LIMIT 20) x"
        ),
    )?;
    let rows: Vec<Value> = serde_json::from_str(&rows).context("embed check: bad JSON")?;
    anyhow::ensure!(
        !rows.is_empty(),
        "embed check: no embedded chunk to compare"
    );
    let mut min = f64::MAX;
    for row in &rows {
        let text = row["t"].as_str().unwrap_or("");
        let stored: Vec<f32> = row["e"]
            .as_str()
            .unwrap_or("[]")
            .trim_matches(['[', ']'])
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        let ours = corpus::demo_embed(text, stored.len());
        min = min.min(f64::from(corpus::cosine(&stored, &ours)));
    }
    Ok(EmbedCheck {
        chunks: rows.len(),
        min_cosine: min,
    })
}
