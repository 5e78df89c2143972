//! How a knowledge job ends when it does not finish: paused for a retry, or failed with a
//! reason the collection page shows. Both only while this process still holds the lease.

use diesel::sql_types::{Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::embed_step::Job;
use super::Knowledge;

/// Lets the job go for `secs` (its lease ends then), saying why it will be retried.
pub(super) async fn pause_job(
    conn: &mut AsyncPgConnection,
    k: &Knowledge,
    job: &Job,
    why: &str,
    secs: i64,
) -> diesel::QueryResult<usize> {
    diesel::sql_query(
        "UPDATE documents SET lease_owner = NULL, \
                lease_until = now() + make_interval(secs => $4), error = $5, updated_at = now() \
          WHERE id = $1 AND generation = $2 AND lease_owner = $3",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .bind::<SqlUuid, _>(k.process_id)
    .bind::<diesel::sql_types::Double, _>(secs as f64)
    .bind::<Text, _>(format!("retrying: {why}"))
    .execute(conn)
    .await
}

/// Ends the job as failed with its reason.
pub(super) async fn fail(
    conn: &mut AsyncPgConnection,
    k: &Knowledge,
    job: &Job,
    code: &str,
    message: &str,
) -> diesel::QueryResult<usize> {
    k.metrics
        .knowledge_jobs
        .with_label_values(&["failed"])
        .inc();
    diesel::sql_query(
        "UPDATE documents SET state = 'failed', error = $4, error_code = $5, lease_owner = NULL, \
                lease_until = NULL, updated_at = now() \
          WHERE id = $1 AND generation = $2 AND lease_owner = $3",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .bind::<SqlUuid, _>(k.process_id)
    .bind::<Text, _>(message)
    .bind::<Text, _>(code)
    .execute(conn)
    .await
}
