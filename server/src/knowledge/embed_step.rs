//! One batch of a job: hold the uploader's budget for the batch, embed it, store the
//! vectors, charge what the provider counted (at most the hold) and record the usage. A
//! refused budget or a failed call stores nothing of the batch.

use diesel::sql_types::{Array, BigInt, Integer, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, RunQueryDsl};
use uuid::Uuid;

use super::embed_budget::{self, Refused};
use super::{vector_literal, Knowledge};
use crate::db::models::budget;
use crate::db::models::usage;
use crate::llm::embeddings::EmbedError;

/// Why a batch did not go through.
#[derive(Debug)]
pub(super) enum StepError {
    Embed(EmbedError),
    /// The uploader's budget cannot pay for it now.
    Budget(String),
    Db(String),
    /// The job is no longer this process's (replaced, removed, or taken over).
    Lost,
}

#[derive(QueryableByName)]
pub(super) struct Pending {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub text: String,
}

/// The job being worked on.
pub(super) struct Job {
    pub id: Uuid,
    pub generation: i32,
    pub uploaded_by: Uuid,
}

/// Embeds `batch` (chunks of `job` not embedded yet) and stores the vectors.
pub(super) async fn embed_batch(
    k: &Knowledge,
    job: &Job,
    batch: &[Pending],
) -> Result<(), StepError> {
    let db = |e: diesel::result::Error| StepError::Db(e.to_string());
    let pool = |e: crate::db::PoolError| StepError::Db(e.to_string());
    // Released while the embedder answers; taken again to store what it answered.
    let mut conn = k.job_connection().await.map_err(pool)?;
    let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
    let estimate = i64::try_from(
        texts
            .iter()
            .map(|t| crate::llm::estimate_tokens(t))
            .sum::<u64>(),
    )
    .unwrap_or(i64::MAX)
    .max(1);
    let hold = match embed_budget::hold(&mut conn, k, job.uploaded_by, estimate)
        .await
        .map_err(db)?
    {
        Ok(hold) => hold,
        Err(Refused::Exhausted { left, need, .. }) => {
            return Err(StepError::Budget(format!(
                "the uploader's token budget has {left} tokens left; embedding the next part \
                 needs about {need}. Retry when the budget resets."
            )))
        }
        Err(Refused::HeldByOthers) => {
            return Err(StepError::Budget(
                "the uploader's budget is held by running turns right now".into(),
            ))
        }
        Err(Refused::Money(refusal)) => return Err(StepError::Budget(format!("{refusal:?}"))),
    };
    drop(conn);
    let started = std::time::Instant::now();
    let embedded = k.model.embed(&texts).await;
    k.metrics
        .knowledge_embed_seconds
        .observe(started.elapsed().as_secs_f64());
    let embedded = match embedded {
        Ok(e) => e,
        Err(e) => {
            embed_budget::release(k, &hold).await;
            return Err(StepError::Embed(e));
        }
    };
    let mut conn = k.job_connection().await.map_err(pool)?;
    let tokens = i64::try_from(embedded.tokens).unwrap_or(i64::MAX);
    let (spend, usage_row) = embed_budget::charge(k, job.uploaded_by, &hold, embedded.tokens);
    let ids: Vec<i64> = batch.iter().map(|p| p.id).collect();
    let vectors: Vec<String> = embedded.vectors.iter().map(|v| vector_literal(v)).collect();
    let dims = i32::try_from(k.model.dimensions).unwrap_or(i32::MAX);
    let (job_id, generation, owner, model) =
        (job.id, job.generation, k.process_id, k.model.name.clone());
    let stored = conn
        .transaction::<usize, diesel::result::Error, _>(|conn| {
            let (ids, vectors, model, usage_row) = (&ids, &vectors, &model, &usage_row);
            let hold = &hold;
            async move {
                let n = diesel::sql_query(
                    "UPDATE chunks c SET embedding = v.e::vector, dims = $3, embedding_model = $4 \
                       FROM unnest($1::int8[], $2::text[]) AS v(id, e) \
                      WHERE c.id = v.id AND c.document_id = $5 AND c.generation = $6 \
                        AND EXISTS (SELECT 1 FROM documents d WHERE d.id = $5 \
                                    AND d.generation = $6 AND d.lease_owner = $7)",
                )
                .bind::<Array<BigInt>, _>(ids)
                .bind::<Array<Text>, _>(vectors)
                .bind::<Integer, _>(dims)
                .bind::<Text, _>(model)
                .bind::<SqlUuid, _>(job_id)
                .bind::<Integer, _>(generation)
                .bind::<SqlUuid, _>(owner)
                .execute(conn)
                .await?;
                budget::settle(conn, hold, spend).await?;
                usage::insert_many(conn, std::slice::from_ref(usage_row)).await?;
                Ok(n)
            }
            .scope_boxed()
        })
        .await
        .map_err(db)?;
    k.metrics
        .knowledge_embedding_tokens
        .inc_by(u64::try_from(tokens).unwrap_or(0));
    if stored == 0 {
        return Err(StepError::Lost);
    }
    Ok(())
}
