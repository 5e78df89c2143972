//! Hybrid search: the query's nearest chunks by vector (HNSW, cosine) and its best by
//! full text (GIN, `websearch_to_tsquery`), fused by reciprocal rank. Both halves are
//! limited to the collections the caller may read inside the SQL (the grant is a join, not
//! a filter afterwards), and pgvector's iterative scan keeps the nearest-neighbour half
//! finding enough rows when those collections are a small part of the table.

use diesel::sql_types::{Array, BigInt, Double, Integer, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::collections::READABLE_BY_1;
use super::{vector_literal, Knowledge, KnowledgeError};

/// Candidates each half contributes to the fusion.
const CANDIDATES: i64 = 40;
/// Reciprocal rank fusion's damping constant (the usual 60).
const RRF_K: u32 = 60;

/// One chunk found.
#[derive(Debug, Clone, Serialize, QueryableByName)]
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
/// index's predicate, never user text).
fn statement(dims: usize) -> String {
    format!(
        "WITH granted AS MATERIALIZED ( \
           SELECT c.id, c.name FROM collections c \
            WHERE {READABLE_BY_1} AND (cardinality($2::uuid[]) = 0 OR c.id = ANY($2::uuid[]))), \
         vec AS MATERIALIZED ( \
           SELECT v.id, row_number() OVER (ORDER BY v.distance) AS r FROM ( \
             SELECT ch.id, (ch.embedding::vector({dims})) <=> $3::vector({dims}) AS distance \
               FROM chunks ch \
              WHERE ch.dims = {dims} AND ch.embedding_model = $4 \
                AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY (ch.embedding::vector({dims})) <=> $3::vector({dims}) \
              LIMIT $5) v WHERE v.distance <= $8), \
         txt AS MATERIALIZED ( \
           SELECT t.id, row_number() OVER (ORDER BY t.rank DESC, t.id) AS r FROM ( \
             SELECT ch.id, ts_rank_cd(ch.tsv, q) AS rank \
               FROM chunks ch, websearch_to_tsquery('english', $6) q \
              WHERE ch.tsv @@ q AND ch.collection_id IN (SELECT id FROM granted) \
                AND EXISTS (SELECT 1 FROM documents d WHERE d.id = ch.document_id \
                            AND d.live_generation = ch.generation) \
              ORDER BY rank DESC LIMIT $5) t), \
         fused AS ( \
           SELECT id, sum(1.0 / ({RRF_K} + r))::float8 AS score \
             FROM (SELECT id, r FROM vec UNION ALL SELECT id, r FROM txt) x \
            GROUP BY id ORDER BY score DESC, id LIMIT $7) \
         SELECT ch.id AS chunk_id, ch.document_id, ch.collection_id, d.name AS file, \
                g.name AS collection, ch.byte_start, ch.byte_end, ch.text, f.score \
           FROM fused f JOIN chunks ch ON ch.id = f.id \
           JOIN documents d ON d.id = ch.document_id \
           JOIN granted g ON g.id = ch.collection_id \
          ORDER BY f.score DESC, ch.id"
    )
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
    let embedded = k.model.embed(&[query.to_owned()]).await.map_err(|e| {
        KnowledgeError::Unavailable(format!("the query could not be embedded: {e}"))
    })?;
    k.metrics.knowledge_embedding_tokens.inc_by(embedded.tokens);
    // Not `.first()`: diesel-async's `RunQueryDsl::first` would be picked.
    let vector = <[Vec<f32>]>::first(&embedded.vectors)
        .map(|v| vector_literal(v))
        .unwrap_or_default();
    let sql = statement(k.model.dimensions);
    let model = k.model.name.clone();
    let limit = i64::try_from(limit).unwrap_or(20);
    let max_distance = 1.0 - k.settings.min_similarity;
    let mut conn = k.pool.get().await?;
    let hits = conn
        .transaction::<Vec<Hit>, diesel::result::Error, _>(|conn| {
            let (sql, vector, model) = (&sql, &vector, &model);
            async move {
                diesel::sql_query(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), \
                            set_config('hnsw.ef_search', '100', true)",
                )
                .execute(conn)
                .await?;
                diesel::sql_query(sql.as_str())
                    .bind::<SqlUuid, _>(user)
                    .bind::<Array<SqlUuid>, _>(only)
                    .bind::<Text, _>(vector)
                    .bind::<Text, _>(model)
                    .bind::<BigInt, _>(CANDIDATES)
                    .bind::<Text, _>(query)
                    .bind::<BigInt, _>(limit)
                    .bind::<Double, _>(max_distance)
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
