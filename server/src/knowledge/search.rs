//! Hybrid search: the query's nearest chunks by vector (HNSW, cosine) and its best by
//! full text, fused by reciprocal rank. The full-text half asks for any of the query's words
//! (GIN; stemmed, stop words dropped: a question in natural words finds what its key words
//! find) and ranks a chunk by the words it holds, each weighed by how rare it is among the
//! readable chunks (`ln(1 + N/df)`), so several and rare words beat one common one. Both
//! halves are limited to the collections the caller may read inside the SQL (the grant is a
//! join, not a filter afterwards), and pgvector's iterative scan keeps the nearest-neighbour half
//! finding enough rows when those collections are a small part of the table.

use diesel::sql_types::{Array, BigInt, Double, Integer, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::collections::READABLE_BY_1;
use super::{vector_literal, Knowledge, KnowledgeError};

/// Candidates each half contributes to the fusion.
const CANDIDATES: i64 = 40;
/// The query's words the full-text half weighs (the first ones, stop words dropped).
const MAX_WORDS: usize = 64;
/// Reciprocal rank fusion's damping constant (the usual 60).
const RRF_K: u32 = 60;
/// Up to this many readable chunks the vector half compares them all (exact, a few
/// milliseconds); above it, the HNSW index walks the graph. A walk for a small scope is the
/// slow case: most neighbours it meets are someone else's, so it runs long to find a few.
const EXACT_SCAN_MAX_CHUNKS: i64 = 5_000;

/// The collections a search covers: readable by the caller, inside its scope.
#[derive(QueryableByName)]
struct Scope {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    chunks: i64,
}

/// One chunk found.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct Hit {
    #[diesel(sql_type = BigInt)]
    pub chunk_id: i64,
    #[diesel(sql_type = SqlUuid)]
    pub document_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub collection_id: Uuid,
    #[diesel(sql_type = Text)]
    pub file: String,
    #[diesel(sql_type = Text)]
    pub collection: String,
    #[diesel(sql_type = Integer)]
    pub byte_start: i32,
    #[diesel(sql_type = Integer)]
    pub byte_end: i32,
    #[diesel(sql_type = Text)]
    pub text: String,
    #[diesel(sql_type = Double)]
    pub score: f64,
}

/// The statement for vectors of `dims` dimensions (a validated number, the partial HNSW
/// index's predicate, never user text). `exact`: the vector half compares every readable
/// chunk instead of walking the index (the expression differs from the index's on purpose).
fn statement(dims: usize, exact: bool) -> String {
    let nearest = if exact {
        format!(
            "SELECT ch.id, ch.embedding <=> $2::vector AS distance \
               FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = $3 \
                AND ch.collection_id = ANY($1::uuid[]) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY ch.embedding <=> $2::vector LIMIT $4"
        )
    } else {
        format!(
            "SELECT ch.id, (ch.embedding::vector({dims})) <=> $2::vector({dims}) AS distance \
               FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = $3 \
                AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY (ch.embedding::vector({dims})) <=> $2::vector({dims}) LIMIT $4"
        )
    };
    format!(
        "WITH granted AS MATERIALIZED ( \
           SELECT c.id, c.name FROM collections c WHERE c.id = ANY($1::uuid[])), \
         vec AS MATERIALIZED ( \
           SELECT v.id, row_number() OVER (ORDER BY v.distance) AS r FROM ({nearest}) v \
            WHERE v.distance <= $7), \
         words AS MATERIALIZED ( \
           SELECT w.lexeme AS l, \
                  ('''' || replace(replace(w.lexeme, '\\', '\\\\'), '''', '''''') || '''') \
                    AS quoted \
             FROM unnest(to_tsvector('english', $5)) w \
            ORDER BY w.positions[1] LIMIT {MAX_WORDS}), \
         wanted AS (SELECT string_agg(quoted, ' | ')::tsquery AS q FROM words), \
         matched AS MATERIALIZED ( \
           SELECT ch.id, ch.tsv FROM chunks ch, wanted \
            WHERE ch.tsv @@ wanted.q AND ch.collection_id = ANY($1::uuid[]) \
              AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                          AND d.live_generation = ch.generation)), \
         pairs AS MATERIALIZED ( \
           SELECT m.id, w.l FROM matched m JOIN words w ON m.tsv @@ w.quoted::tsquery), \
         df AS (SELECT l, count(*)::float8 AS n FROM pairs GROUP BY l), \
         txt AS MATERIALIZED ( \
           SELECT t.id, row_number() OVER (ORDER BY t.rank DESC, t.id) AS r FROM ( \
             SELECT p.id, sum(ln(1.0 + $8::float8 / df.n)) AS rank \
               FROM pairs p JOIN df ON df.l = p.l GROUP BY p.id \
              ORDER BY rank DESC, p.id LIMIT $4) t), \
         fused AS ( \
           SELECT id, sum(1.0 / ({RRF_K} + r))::float8 AS score \
             FROM (SELECT id, r FROM vec UNION ALL SELECT id, r FROM txt) x \
            GROUP BY id ORDER BY score DESC, id LIMIT $6) \
         SELECT ch.id AS chunk_id, ch.document_id, ch.collection_id, d.name AS file, \
                g.name AS collection, ch.byte_start, ch.byte_end, ch.text, f.score \
           FROM fused f JOIN chunks ch ON ch.id = f.id \
           JOIN documents d ON d.id = ch.document_id \
           JOIN granted g ON g.id = ch.collection_id \
          ORDER BY f.score DESC, ch.id"
    )
}

/// The collections `user` may read among `only` (all of them when `only` is empty), with
/// their live chunks. Asked before anything else: a search with nothing to read embeds
/// nothing and walks no index.
async fn scope(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    only: &[Uuid],
) -> Result<Vec<Scope>, KnowledgeError> {
    Ok(diesel::sql_query(format!(
        "SELECT c.id, coalesce(sum(d.chunk_count) \
                  FILTER (WHERE d.live_generation IS NOT NULL), 0)::int8 AS chunks \
           FROM collections c LEFT JOIN documents d ON d.collection_id = c.id \
          WHERE {READABLE_BY_1} AND (cardinality($2::uuid[]) = 0 OR c.id = ANY($2::uuid[])) \
          GROUP BY c.id"
    ))
    .bind::<SqlUuid, _>(user)
    .bind::<Array<SqlUuid>, _>(only)
    .load(conn)
    .await?)
}

/// The `k` best chunks for `query` in the collections `user` may read (only those of
/// `only`, when it names any).
pub async fn search(
    k: &Knowledge,
    user: Uuid,
    only: &[Uuid],
    query: &str,
    limit: usize,
) -> Result<Vec<Hit>, KnowledgeError> {
    k.usable()?;
    let started = std::time::Instant::now();
    let scope = {
        let mut conn = k.pool.get().await?;
        scope(&mut conn, user, only).await?
    };
    let readable_chunks: i64 = scope.iter().map(|s| s.chunks).sum();
    if readable_chunks == 0 {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = scope.iter().map(|s| s.id).collect();
    let vector = vector_literal(&super::embed_budget::embed_query(k, user, query).await?);
    let sql = statement(k.model.dimensions, readable_chunks <= EXACT_SCAN_MAX_CHUNKS);
    let model = k.model.name.clone();
    let limit = i64::try_from(limit).unwrap_or(20);
    let max_distance = 1.0 - k.settings.min_similarity;
    let mut conn = k.pool.get().await?;
    let hits = conn
        .transaction::<Vec<Hit>, diesel::result::Error, _>(|conn| {
            let (sql, vector, model, ids) = (&sql, &vector, &model, &ids);
            async move {
                diesel::sql_query(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), \
                            set_config('hnsw.ef_search', '100', true)",
                )
                .execute(conn)
                .await?;
                diesel::sql_query(sql.as_str())
                    .bind::<Array<SqlUuid>, _>(ids)
                    .bind::<Text, _>(vector)
                    .bind::<Text, _>(model)
                    .bind::<BigInt, _>(CANDIDATES)
                    .bind::<Text, _>(query)
                    .bind::<BigInt, _>(limit)
                    .bind::<Double, _>(max_distance)
                    .bind::<Double, _>(readable_chunks as f64)
                    .load(conn)
                    .await
            }
            .scope_boxed()
        })
        .await?;
    k.metrics
        .knowledge_search_seconds
        .observe(started.elapsed().as_secs_f64());
    Ok(hits)
}
