//! The server's search statement under `EXPLAIN (ANALYZE, BUFFERS)`, run by the kit with
//! a search's parameters written in: what a slow search spends its time on.

use super::{corpus, corpus_dims};

fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Up to this many readable chunks the server compares vectors exactly
/// (`EXACT_SCAN_MAX_CHUNKS` of `server/src/knowledge/search.rs`).
const EXACT_SCAN_MAX_CHUNKS: i64 = 5_000;

fn psql(pg: &(String, String), db: &str, sql: &str) -> anyhow::Result<String> {
    let out = std::process::Command::new("psql")
        .args([
            "-h", &pg.0, "-p", &pg.1, "-U", "postgres", "-d", db, "-XAtq", "-c", sql,
        ])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "EXPLAIN failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The server's search (`server/src/knowledge/search.rs`: `scope()`, then `statement()`,
/// with its parameters written in, the caller's collection test `READABLE_BY_1` of
/// `collections.rs`, and the two settings the server sets for its transaction) under
/// `EXPLAIN (ANALYZE, BUFFERS)`. A copy: keep it in step with the server's.
pub(super) fn explain(
    pg: &(String, String),
    db: &str,
    user: &str,
    q: &str,
    scope: Option<&str>,
) -> anyhow::Result<String> {
    let dims = corpus_dims();
    let vector = corpus::vector_text(&corpus::demo_embed(q, dims));
    // `knowledge.min_similarity`: the server's default, or what the kit's environment (which
    // the server inherits) sets.
    let min_similarity: f64 = std::env::var("AGENTCHAT_KNOWLEDGE_MIN_SIMILARITY")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.1);
    let max_distance = 1.0 - min_similarity;
    let only = match scope {
        Some(s) => format!("ARRAY[{}]::uuid[]", lit(s)),
        None => "ARRAY[]::uuid[]".into(),
    };
    let u = format!("{}::uuid", lit(user));
    // The server's first statement: the readable collections in scope and their live chunks.
    let found = psql(
        pg,
        db,
        &format!(
            "SELECT coalesce(string_agg(s.id::text, ','), '') || '|' || coalesce(sum(s.chunks), 0)                FROM (SELECT c.id, coalesce(sum(d.chunk_count)                              FILTER (WHERE d.live_generation IS NOT NULL), 0)::int8 AS chunks                        FROM collections c LEFT JOIN documents d ON d.collection_id = c.id                       WHERE (c.owner_id = {u} OR EXISTS (SELECT 1 FROM collection_grants g                              JOIN users u ON u.role = g.role                              WHERE g.collection_id = c.id AND u.id = {u}))                         AND (cardinality({only}) = 0 OR c.id = ANY({only}))                       GROUP BY c.id) s"
        ),
    )?;
    let (ids, chunks) = found.split_once('|').unwrap_or(("", "0"));
    let chunks: i64 = chunks.trim().parse().unwrap_or(0);
    if chunks == 0 {
        return Ok(format!(
            "No search statement: the scope query found {} readable collection(s) with no \
             indexed chunk, so the server answers at once (no embedding, no index walk).",
            ids.split(',').filter(|s| !s.is_empty()).count()
        ));
    }
    let ids = format!(
        "ARRAY[{}]::uuid[]",
        ids.split(',').map(lit).collect::<Vec<_>>().join(",")
    );
    let (v, qq) = (lit(&vector), lit(q));
    let nearest = if chunks <= EXACT_SCAN_MAX_CHUNKS {
        format!(
            "SELECT ch.id, ch.embedding <=> {v}::vector AS distance FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = 'demo-embed' \
                AND ch.collection_id = ANY({ids}) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY ch.embedding <=> {v}::vector LIMIT 40"
        )
    } else {
        format!(
            "SELECT ch.id, (ch.embedding::vector({dims})) <=> {v}::vector({dims}) AS distance \
               FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = 'demo-embed' \
                AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY (ch.embedding::vector({dims})) <=> {v}::vector({dims}) LIMIT 40"
        )
    };
    let sql = format!(
        "BEGIN; SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 100; \
         EXPLAIN (ANALYZE, BUFFERS) \
         WITH granted AS MATERIALIZED ( \
           SELECT c.id, c.name FROM collections c WHERE c.id = ANY({ids})), \
         vec AS MATERIALIZED ( \
           SELECT v.id, row_number() OVER (ORDER BY v.distance) AS r FROM ({nearest}) v \
            WHERE v.distance <= {max_distance}), \
         txt AS MATERIALIZED ( \
           SELECT t.id, row_number() OVER (ORDER BY t.rank DESC, t.id) AS r FROM ( \
             SELECT ch.id, ts_rank_cd(ch.tsv, q) AS rank \
               FROM chunks ch, websearch_to_tsquery('english', {qq}) q \
              WHERE ch.tsv @@ q AND ch.collection_id = ANY({ids}) \
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
    Ok(shorten_vectors(&psql(pg, db, &sql)?))
}

/// The plan with every long vector literal (`'[0,0.70711,…]'`) written `'[query vector]'`.
fn shorten_vectors(plan: &str) -> String {
    let mut out = String::with_capacity(plan.len());
    let mut rest = plan;
    while let Some(i) = rest.find("'[") {
        let Some(len) = rest[i..].find("]'") else {
            break;
        };
        out.push_str(&rest[..i]);
        if len > 100 {
            out.push_str("'[query vector]'");
        } else {
            out.push_str(&rest[i..i + len + 2]);
        }
        rest = &rest[i + len + 2..];
    }
    out.push_str(rest);
    out
}
