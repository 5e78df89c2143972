//! Ingestion jobs. The `documents` row is the job: a worker claims it (its lease names this
//! process), extracts and chunks the file once (the chunks of the generation being built,
//! stored with the text in one commit), embeds the chunks batch by batch (each batch
//! committed, so a restart resumes where it stopped), and at the end makes the new
//! generation the live one and drops the old in one commit: search never sees a file half
//! indexed. A job whose process died is claimed again once that process is reaped, at most
//! `max_attempts` claims in all (a file that crashes its reader fails instead of crash-looping
//! every replica); a failing endpoint is retried with a growing pause, then the file fails
//! with its reason; one claim runs at most `job_timeout_secs`. Workers serve uploaders in
//! turn ([`claim`]).

use std::sync::Arc;
use std::time::Duration;

use diesel::sql_types::{BigInt, Bool, Float4, Integer, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use super::embed_step::{embed_batch, Job, Pending, StepError};
use super::job_claim::{claim, Claimed};
use super::job_end::{fail, pause_job};
use super::Knowledge;

/// How often an idle worker looks for jobs other replicas queued.
const POLL: Duration = Duration::from_secs(1);

/// Starts the configured number of workers on this process (none while knowledge is off).
pub fn spawn_workers(k: Arc<Knowledge>) {
    if k.usable().is_err() {
        return;
    }
    for _ in 0..k.settings.workers {
        let k = k.clone();
        tokio::spawn(async move { worker(k).await });
    }
}

async fn worker(k: Arc<Knowledge>) {
    loop {
        let claimed = match k.pool.get().await {
            Ok(mut conn) => claim(&mut conn, k.process_id).await.ok().flatten(),
            Err(_) => None,
        };
        match claimed {
            Some(job) => run(&k, job).await,
            None => {
                tokio::select! {
                    () = k.wake.notified() => {}
                    () = tokio::time::sleep(POLL) => {}
                }
            }
        }
    }
}

/// How a job stopped short.
pub(super) enum Stop {
    /// For good: the file's reason, shown with it.
    Fail { code: &'static str, message: String },
    /// Try again after a pause.
    Pause(String),
    /// Not ours any more (replaced, removed, taken over): leave it.
    Lost,
}

async fn run(k: &Knowledge, claimed: Claimed) {
    let job = Job {
        id: claimed.id,
        generation: claimed.generation,
        uploaded_by: claimed.uploaded_by,
    };
    let max = k.settings.max_attempts;
    let result = if claimed.attempts > max {
        // The claims before this one used every attempt and the last ended with its process
        // gone (a pause at the last attempt fails the file instead): the file may be what
        // kills them. Set it aside rather than crash every replica again.
        Err(crashed(&claimed.state, claimed.attempts - 1))
    } else {
        let budget = Duration::from_secs(k.settings.job_timeout_secs);
        tokio::time::timeout(budget, work(k, &job))
            .await
            .unwrap_or_else(|_| {
                Err(Stop::Fail {
                    code: "job_timeout",
                    message: format!(
                        "indexing the file took longer than {} s, the most one job may; it \
                         was stopped",
                        budget.as_secs()
                    ),
                })
            })
    };
    let Some(mut conn) = end_connection(k).await else {
        // The database stayed away: the lease stays, and the job is taken again once
        // this process is reaped.
        tracing::warn!(document = %job.id, "a knowledge job's end could not be stored");
        return;
    };
    let ended = match result {
        Ok(()) => return,
        Err(Stop::Lost) => return,
        Err(Stop::Pause(why)) if claimed.attempts < max => {
            let pause = i64::from(claimed.attempts.clamp(1, 30));
            pause_job(&mut conn, k, &job, &why, pause).await
        }
        Err(Stop::Pause(why)) => fail(&mut conn, k, &job, "embedding_failed", &why).await,
        Err(Stop::Fail { code, message }) => fail(&mut conn, k, &job, code, &message).await,
    };
    if let Err(e) = ended {
        tracing::warn!(error = %e, document = %job.id, "a knowledge job's end could not be stored");
    }
}

/// The failure of a job whose server process died `times` times while running it.
fn crashed(state: &str, times: i32) -> Stop {
    tracing::warn!(
        times,
        state,
        "a knowledge file stopped its server process; set aside"
    );
    if state == "extracting" {
        Stop::Fail {
            code: "extraction_crashed",
            message: format!(
                "the file stopped the reader {times} times; it was set aside (Retry tries again)"
            ),
        }
    } else {
        Stop::Fail {
            code: "job_crashed",
            message: format!(
                "the file was tried {times} times, the last time stopping the server while \
                 it was indexed; it was set aside (Retry tries again)"
            ),
        }
    }
}

/// A connection to store how a job ended. Giving up at once would leave the job leased by
/// this live process, which no claim takes back: a job stuck "embedding" for good. So it
/// waits out a busy pool or a database away for a while (about five minutes in all).
async fn end_connection(k: &Knowledge) -> Option<crate::db::PooledConn> {
    for attempt in 0..10u32 {
        if let Ok(conn) = k.job_connection().await {
            return Some(conn);
        }
        tokio::time::sleep(Duration::from_secs(u64::from(attempt.min(5)))).await;
    }
    None
}

/// A pooled connection for one step of a job (none is held while the embedder answers: a
/// slow embedder must not take the pool from the requests).
async fn connect(k: &Knowledge) -> Result<crate::db::PooledConn, Stop> {
    k.job_connection()
        .await
        .map_err(|e| Stop::Pause(format!("the database is unavailable: {e}")))
}

/// The job's steps from wherever it stands.
async fn work(k: &Knowledge, job: &Job) -> Result<(), Stop> {
    let db = |e: diesel::result::Error| Stop::Pause(format!("database error: {e}"));
    let total = {
        let mut conn = connect(k).await?;
        if chunk_count(&mut conn, job).await.map_err(db)? == 0 {
            super::job_extract::extract_and_chunk(k, &mut conn, job).await?;
        }
        chunk_count(&mut conn, job).await.map_err(db)?.max(1)
    };
    loop {
        let batch: Vec<Pending> = {
            let mut conn = connect(k).await?;
            let batch: Vec<Pending> = diesel::sql_query(
                "SELECT id, text FROM chunks WHERE document_id = $1 AND generation = $2 \
                   AND dims IS NULL ORDER BY ord LIMIT $3",
            )
            .bind::<SqlUuid, _>(job.id)
            .bind::<Integer, _>(job.generation)
            .bind::<BigInt, _>(i64::try_from(k.settings.embed_batch).unwrap_or(64))
            .load(&mut conn)
            .await
            .map_err(db)?;
            if batch.is_empty() {
                return finish(k, &mut conn, job, total).await;
            }
            batch
        };
        match embed_batch(k, job, &batch).await {
            Ok(()) => {}
            Err(StepError::Lost) => return Err(Stop::Lost),
            Err(StepError::Budget(message)) => {
                return Err(Stop::Fail {
                    code: "budget_exhausted",
                    message,
                })
            }
            Err(StepError::Db(e)) => return Err(Stop::Pause(format!("database error: {e}"))),
            Err(StepError::Embed(e)) if e.retryable() => return Err(Stop::Pause(e.to_string())),
            Err(StepError::Embed(e)) => {
                return Err(Stop::Fail {
                    code: "embedding_failed",
                    message: e.to_string(),
                })
            }
        }
        let mut conn = connect(k).await?;
        let left = chunk_left(&mut conn, job).await.map_err(db)?;
        let done = (total - left) as f32 / total as f32;
        set_progress(&mut conn, k, job, "embedding", 0.1 + 0.9 * done)
            .await
            .map_err(db)?;
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn chunk_count(conn: &mut AsyncPgConnection, job: &Job) -> diesel::QueryResult<i64> {
    let c: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM chunks WHERE document_id = $1 AND generation = $2",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .get_result(conn)
    .await?;
    Ok(c.n)
}

async fn chunk_left(conn: &mut AsyncPgConnection, job: &Job) -> diesel::QueryResult<i64> {
    let c: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM chunks WHERE document_id = $1 AND generation = $2 \
           AND dims IS NULL",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .get_result(conn)
    .await?;
    Ok(c.n)
}

pub(super) async fn set_progress(
    conn: &mut AsyncPgConnection,
    k: &Knowledge,
    job: &Job,
    state: &str,
    progress: f32,
) -> diesel::QueryResult<usize> {
    diesel::sql_query(
        "UPDATE documents SET state = $4, progress = $5, updated_at = now() \
          WHERE id = $1 AND generation = $2 AND lease_owner = $3",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .bind::<SqlUuid, _>(k.process_id)
    .bind::<Text, _>(state)
    .bind::<Float4, _>(progress)
    .execute(conn)
    .await
}

#[derive(QueryableByName)]
struct Done {
    #[diesel(sql_type = Bool)]
    done: bool,
}

/// The new generation goes live and the old one goes, in one commit.
async fn finish(
    k: &Knowledge,
    conn: &mut AsyncPgConnection,
    job: &Job,
    total: i64,
) -> Result<(), Stop> {
    let (id, generation, me, model) = (job.id, job.generation, k.process_id, &k.model.name);
    let done = conn
        .transaction::<bool, diesel::result::Error, _>(|conn| {
            async move {
                let live: Done = diesel::sql_query(
                    "WITH flip AS (UPDATE documents SET live_generation = $2, state = 'ready', \
                                     progress = 1, error = NULL, error_code = NULL, \
                                     chunk_count = $4, embedding_model = $5, lease_owner = NULL, \
                                     attempts = 0, updated_at = now() \
                                   WHERE id = $1 AND generation = $2 AND lease_owner = $3 \
                                   RETURNING id) \
                     SELECT EXISTS (SELECT 1 FROM flip) AS done",
                )
                .bind::<SqlUuid, _>(id)
                .bind::<Integer, _>(generation)
                .bind::<SqlUuid, _>(me)
                .bind::<Integer, _>(i32::try_from(total).unwrap_or(i32::MAX))
                .bind::<Text, _>(model)
                .get_result(conn)
                .await?;
                if live.done {
                    diesel::sql_query(
                        "DELETE FROM chunks WHERE document_id = $1 AND generation <> $2",
                    )
                    .bind::<SqlUuid, _>(id)
                    .bind::<Integer, _>(generation)
                    .execute(conn)
                    .await?;
                }
                Ok(live.done)
            }
            .scope_boxed()
        })
        .await
        .map_err(|e| Stop::Pause(format!("database error: {e}")))?;
    if !done {
        return Err(Stop::Lost);
    }
    k.metrics.knowledge_jobs.with_label_values(&["ready"]).inc();
    k.metrics
        .knowledge_chunks
        .inc_by(u64::try_from(total).unwrap_or(0));
    Ok(())
}
