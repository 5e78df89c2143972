//! Noticing that a running job is no longer wanted: its file was removed or replaced (a
//! new generation), or another process holds it. Extraction stops its child then.

use std::time::Duration;

use diesel::sql_types::{Bool, Integer, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::embed_step::Job;
use super::Knowledge;

/// How often a running extraction checks that its job is still its own.
const EVERY: Duration = Duration::from_secs(1);

#[derive(QueryableByName)]
struct Held {
    #[diesel(sql_type = Bool)]
    held: bool,
}

/// Completes once `job` is not this process's any more; never while it is, nor while the
/// database cannot say (the extraction's own deadline still holds then). Asks on the job's
/// own connection, idle meanwhile: the pool may have none to spare.
pub(super) async fn lost(conn: &mut AsyncPgConnection, k: &Knowledge, job: &Job) {
    loop {
        tokio::time::sleep(EVERY).await;
        let held: Result<Held, _> = diesel::sql_query(
            "SELECT EXISTS (SELECT 1 FROM documents WHERE id = $1 AND generation = $2 \
                              AND lease_owner = $3) AS held",
        )
        .bind::<SqlUuid, _>(job.id)
        .bind::<Integer, _>(job.generation)
        .bind::<SqlUuid, _>(k.process_id)
        .get_result(conn)
        .await;
        if held.is_ok_and(|h| !h.held) {
            return;
        }
    }
}
