//! Which ingestion job a worker takes next, and taking it (its lease names this process).
//! Public so that the API tests can race claims against a real database.

use diesel::sql_types::{Integer, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

/// A job no live process holds, as a condition on the `documents` row named `$row`: the claim
/// picks by it and checks it again on the row it updates, so the two must not drift apart.
macro_rules! claimable {
    ($row:literal) => {
        concat!(
            $row,
            ".state IN ('queued', 'extracting', 'embedding') \
             AND (",
            $row,
            ".lease_until IS NULL OR ",
            $row,
            ".lease_until < now()) \
             AND (",
            $row,
            ".lease_owner IS NULL OR NOT EXISTS \
                  (SELECT 1 FROM server_processes p WHERE p.id = ",
            $row,
            ".lease_owner))"
        )
    };
}

#[derive(QueryableByName)]
pub struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Integer)]
    pub generation: i32,
    #[diesel(sql_type = SqlUuid)]
    pub uploaded_by: Uuid,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    /// Where the job stood when claimed (`extracting` for a new one).
    #[diesel(sql_type = Text)]
    pub state: String,
}

/// Takes a job nobody alive holds and no pause holds back, fairly between uploaders: from
/// the uploader with the fewest jobs running, then the one served least recently, then the
/// oldest. One member's many files do not keep another's waiting behind all of them.
/// The claim counts as an attempt even if this process dies on it (see `jobs::run`).
///
/// The outer `WHERE` repeats the lease conditions on `d`: a job another worker claimed and
/// committed after this statement's snapshot is locked by the subquery all the same (`SKIP
/// LOCKED` skips only rows locked *now*), and only a condition on the row being updated is
/// checked again against its newest version. Without it two workers of one process could
/// both take the job and embed every batch twice.
pub async fn claim(conn: &mut AsyncPgConnection, me: Uuid) -> diesel::QueryResult<Option<Claimed>> {
    diesel::sql_query(concat!(
        "UPDATE documents d SET lease_owner = $1, lease_until = NULL, attempts = d.attempts + 1, \
                claimed_at = now(), \
                state = CASE WHEN d.state = 'queued' THEN 'extracting' ELSE d.state END \
          WHERE d.id = ( \
            WITH waiting AS ( \
                SELECT x.id, x.uploaded_by, x.updated_at FROM documents x \
                 WHERE ",
        claimable!("x"),
        "), \
            load AS ( \
                SELECT y.uploaded_by, \
                       count(*) FILTER (WHERE y.state IN ('queued', 'extracting', 'embedding') \
                           AND EXISTS (SELECT 1 FROM server_processes p \
                                        WHERE p.id = y.lease_owner)) AS running, \
                       max(y.claimed_at) AS served \
                  FROM documents y \
                 WHERE y.uploaded_by IN (SELECT uploaded_by FROM waiting) \
                 GROUP BY y.uploaded_by) \
            SELECT x.id FROM documents x \
              JOIN waiting w ON w.id = x.id \
              JOIN load l ON l.uploaded_by = w.uploaded_by \
             ORDER BY l.running, l.served NULLS FIRST, w.updated_at \
             LIMIT 1 FOR UPDATE OF x SKIP LOCKED) \
            AND ",
        claimable!("d"),
        " \
         RETURNING d.id, d.generation, d.uploaded_by, d.attempts, d.state"
    ))
    .bind::<SqlUuid, _>(me)
    .get_result(conn)
    .await
    .optional()
}
