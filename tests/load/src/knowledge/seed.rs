//! The search corpus. Collections through the API: one per user, `member_shared` more of
//! the admin's shared with the `member` role, and one of the admin's shared with a role no
//! load user has (`auditor`), so grants decide what a search may return both ways. Their
//! documents and chunks with SQL (one `psql` reading a COPY stream the kit writes): generated
//! prose of about 1.0–1.5 KB a chunk (the server's 300-token chunks of the same prose average
//! about 1.25 KB), each with the vector `demo-embed` gives its text, the
//! document's text the concatenation of its chunks (the byte offsets point into it). The
//! HNSW index the server made is dropped for the load and built again from its own
//! definition (`pg_indexes.indexdef`), which is much faster than 100,000 inserts into it.

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use serde_json::json;
use tokio::time::Instant;

use super::corpus::{self, Rng};
use super::{corpus_dims, ingest, put_role, Users};
use crate::bench::{log, Config, Started};
use crate::sys;

/// Chunks a seeded document has, at most.
const CHUNKS_PER_DOCUMENT: usize = 100;
/// The role the restricted collection is shared with (no load user has it).
pub const OTHER_ROLE: &str = "auditor";

#[derive(Debug, Clone, Default, Serialize)]
pub struct SeedResult {
    pub users: usize,
    pub own_collections: usize,
    /// The admin's collections shared with `member`.
    pub member_shared: usize,
    /// The admin's collection shared with `auditor` only.
    pub restricted: usize,
    pub documents: usize,
    pub chunks: usize,
    pub chunk_bytes_avg: f64,
    /// Chunks a member may read, as a share of all (own collection + the shared ones).
    pub member_readable_fraction: f64,
    pub api_secs: f64,
    pub copy_secs: f64,
    pub index_secs: f64,
    pub vacuum_secs: f64,
    pub chunks_table_mib: f64,
    pub hnsw_index_mib: f64,
    pub tsv_index_mib: f64,
}

/// A seeded collection.
#[derive(Debug, Clone)]
pub struct Coll {
    pub id: String,
    pub owner: usize,
    pub chunks: usize,
}

pub(super) struct Seeded {
    pub result: SeedResult,
    pub collections: Vec<Coll>,
    /// Per user: the collections they may read (what the kit made, not what SQL says).
    pub readable: Vec<HashSet<String>>,
    /// Per user: a collection they may not read (for scoped searches), if any.
    pub foreign: Vec<Option<String>>,
}

fn copy_escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
}

/// Writes the documents and chunks of `colls` to `psql` as one COPY script; returns
/// (documents, chunks, text bytes).
fn copy(
    pg: &(String, String),
    db: &str,
    colls: &[(Coll, String)],
    drop_index: &str,
    log_path: &std::path::Path,
) -> anyhow::Result<(usize, usize, u64)> {
    let err = std::fs::File::create(log_path)?;
    let mut child = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            &pg.0,
            "-p",
            &pg.1,
            "-U",
            "postgres",
            "-d",
            db,
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .context("psql")?;
    let stdin = child.stdin.take().context("psql stdin")?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
    let mut rng = Rng::new(7);
    let (mut documents, mut chunks, mut text_bytes) = (0usize, 0usize, 0u64);
    let written = (|| -> std::io::Result<()> {
        writeln!(w, "DROP INDEX IF EXISTS {drop_index};")?;
        // Every document first (their ids are the kit's), then every chunk.
        let mut docs: Vec<(String, String, String, usize)> = Vec::new(); // id, coll, owner, chunks
        for (c, owner_id) in colls {
            let n_docs = c.chunks.div_ceil(CHUNKS_PER_DOCUMENT).max(1);
            for d in 0..n_docs {
                let n = c.chunks / n_docs + usize::from(d < c.chunks % n_docs);
                docs.push((rng.uuid(), c.id.clone(), owner_id.clone(), n));
            }
        }
        writeln!(
            w,
            "COPY documents (id, collection_id, name, source, uploaded_by, content, content_sha256, \
             bytes, state, progress, generation, live_generation, chunk_count, embedding_model, \
             target_model) FROM STDIN;"
        )?;
        for (i, (id, coll, owner, n)) in docs.iter().enumerate() {
            writeln!(
                w,
                "{id}\t{coll}\tseed-{i:05}.md\tupload\t{owner}\t\\\\x\t\t0\tready\t1\t1\t1\t{n}\tdemo-embed\tdemo-embed"
            )?;
        }
        writeln!(w, "\\.")?;
        writeln!(
            w,
            "COPY chunks (document_id, collection_id, generation, ord, byte_start, byte_end, text, \
             embedding_model, dims, embedding) FROM STDIN;"
        )?;
        let mut line = String::with_capacity(8192);
        for (id, coll, _, n) in &docs {
            let target = 950 + rng.below(200);
            let mut start = 0usize;
            for (ord, text) in corpus::chunk_texts(&mut rng, *n, target).iter().enumerate() {
                let v = corpus::demo_embed(text, corpus_dims());
                line.clear();
                line.push_str(&format!(
                    "{id}\t{coll}\t1\t{ord}\t{start}\t{}\t",
                    start + text.len()
                ));
                copy_escape(text, &mut line);
                line.push_str(&format!("\tdemo-embed\t{}\t", corpus_dims()));
                line.push_str(&corpus::vector_text(&v));
                line.push('\n');
                w.write_all(line.as_bytes())?;
                start += text.len();
                chunks += 1;
                text_bytes += text.len() as u64;
            }
        }
        documents = docs.len();
        writeln!(w, "\\.")?;
        // The documents' text, content and size from their chunks.
        writeln!(
            w,
            "UPDATE documents d SET text = c.t, content = convert_to(c.t, 'UTF8'), \
               bytes = octet_length(c.t), content_sha256 = encode(sha256(convert_to(c.t, 'UTF8')), 'hex') \
              FROM (SELECT document_id, string_agg(text, '' ORDER BY ord) AS t FROM chunks \
                     GROUP BY document_id) c \
             WHERE d.id = c.document_id AND d.name LIKE 'seed-%';"
        )?;
        w.flush()
    })();
    drop(w);
    let status = child.wait()?;
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    anyhow::ensure!(
        status.success() && written.is_ok(),
        "seeding with psql failed ({status}, {written:?}): {}",
        log.trim()
    );
    Ok((documents, chunks, text_bytes))
}

pub(super) async fn seed(
    cfg: &Config,
    started: &Started,
    pg: &(String, String),
    users: &Users,
) -> anyhow::Result<Seeded> {
    let t = Instant::now();
    let api = &started.api;
    let n = users.tokens.len();
    let admin = &users.tokens[0];
    // One collection per user, made by its owner.
    let mut own = Vec::new();
    for (i, token) in users.tokens.iter().enumerate() {
        own.push(Coll {
            id: ingest::create_collection(api, token, &format!("kb of user {i}")).await?,
            owner: i,
            chunks: 0,
        });
    }
    // Shared by the admin: with `member`, and one with a role nobody here has.
    let member_shared = (n / 12).max(1);
    put_role(api, admin, OTHER_ROLE, None).await?;
    let mut shared = Vec::new();
    for j in 0..=member_shared {
        let role = if j < member_shared {
            "member"
        } else {
            OTHER_ROLE
        };
        let id = ingest::create_collection(api, admin, &format!("shared {j} ({role})")).await?;
        let r = api
            .http
            .put(format!("{}/api/collections/{id}/grants", api.base))
            .bearer_auth(admin)
            .json(&json!({"roles": [role]}))
            .send()
            .await?;
        anyhow::ensure!(r.status().is_success(), "grants: HTTP {}", r.status());
        shared.push((
            Coll {
                id,
                owner: 0,
                chunks: 0,
            },
            role,
        ));
    }
    let api_secs = t.elapsed().as_secs_f64();

    // Who may read what, from what the kit made.
    let mut readable: Vec<HashSet<String>> =
        (0..n).map(|i| HashSet::from([own[i].id.clone()])).collect();
    for (c, role) in &shared {
        for (i, set) in readable.iter_mut().enumerate() {
            if i == 0 || *role == "member" {
                set.insert(c.id.clone());
            }
        }
    }
    let foreign: Vec<Option<String>> = (0..n)
        .map(|i| {
            let other = &own[(i + 1) % n].id;
            (!readable[i].contains(other)).then(|| other.clone())
        })
        .collect();

    // The same number of chunks in every collection.
    let mut all: Vec<Coll> = own
        .into_iter()
        .chain(shared.into_iter().map(|(c, _)| c))
        .collect();
    let per = cfg.knowledge_chunks / all.len();
    let extra = cfg.knowledge_chunks % all.len();
    for (i, c) in all.iter_mut().enumerate() {
        c.chunks = per + usize::from(i < extra);
    }
    let with_owner: Vec<(Coll, String)> = all
        .iter()
        .map(|c| (c.clone(), users.ids[c.owner].clone()))
        .collect();

    let index = format!("chunks_embedding_hnsw_{}", corpus_dims());
    let indexdef = sys::psql_in(
        &pg.0,
        &pg.1,
        &started.db,
        &format!("SELECT indexdef FROM pg_indexes WHERE indexname = '{index}'"),
    )?;
    anyhow::ensure!(!indexdef.is_empty(), "the server made no index {index}");
    log(format!(
        "knowledge: seeding {} chunks in {} collections ({} shared with member, 1 with {OTHER_ROLE})",
        cfg.knowledge_chunks,
        all.len(),
        member_shared
    ));
    let t_copy = Instant::now();
    let (pg2, db, idx, path) = (
        pg.clone(),
        started.db.clone(),
        index.clone(),
        cfg.out_dir.join("knowledge-seed.psql.log"),
    );
    let with_owner = Arc::new(with_owner);
    let (documents, chunks, text_bytes) =
        tokio::task::spawn_blocking(move || copy(&pg2, &db, &with_owner, &idx, &path)).await??;
    let copy_secs = t_copy.elapsed().as_secs_f64();
    let t_index = Instant::now();
    sys::psql_in(
        &pg.0,
        &pg.1,
        &started.db,
        &format!("SET maintenance_work_mem = '1GB'; {indexdef}"),
    )?;
    let index_secs = t_index.elapsed().as_secs_f64();
    let t_vac = Instant::now();
    sys::psql_in(
        &pg.0,
        &pg.1,
        &started.db,
        "VACUUM (ANALYZE) chunks, documents, collections, collection_grants",
    )?;
    let vacuum_secs = t_vac.elapsed().as_secs_f64();

    let counted: usize = sys::psql_in(
        &pg.0,
        &pg.1,
        &started.db,
        &format!(
            "SELECT count(*) FROM chunks ch JOIN documents d ON d.id = ch.document_id \
                  WHERE ch.dims = {} AND ch.embedding_model = 'demo-embed' \
                    AND d.live_generation = ch.generation",
            corpus_dims()
        ),
    )?
    .parse()?;
    anyhow::ensure!(
        counted == cfg.knowledge_chunks,
        "seeding: {counted} searchable chunks, {} wanted",
        cfg.knowledge_chunks
    );
    let mib = |rel: &str| -> f64 {
        sys::psql_in(
            &pg.0,
            &pg.1,
            &started.db,
            &format!("SELECT pg_total_relation_size('{rel}')"),
        )
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |b| b / 1_048_576.0)
    };
    let member_chunks: usize = all
        .iter()
        .filter(|c| n > 1 && readable[1].contains(&c.id))
        .map(|c| c.chunks)
        .sum();
    let result = SeedResult {
        users: n,
        own_collections: n,
        member_shared,
        restricted: 1,
        documents,
        chunks,
        chunk_bytes_avg: text_bytes as f64 / chunks.max(1) as f64,
        member_readable_fraction: member_chunks as f64 / chunks.max(1) as f64,
        api_secs,
        copy_secs,
        index_secs,
        vacuum_secs,
        chunks_table_mib: mib("chunks"),
        hnsw_index_mib: mib(&index),
        tsv_index_mib: mib("chunks_tsv"),
    };
    log(format!(
        "knowledge: {} documents, {} chunks seeded: COPY {:.1} s, HNSW index {:.1} s, VACUUM {:.1} s",
        documents, chunks, copy_secs, index_secs, vacuum_secs
    ));
    Ok(Seeded {
        result,
        collections: all,
        readable,
        foreign,
    })
}
