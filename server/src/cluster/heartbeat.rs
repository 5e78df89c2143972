//! One heartbeat row per server process, and the end of a dead process's turns.
//!
//! A turn's claim on its conversation and its budget holds name the process running it. When
//! that process's heartbeat is older than the replica timeout, any other process ends its
//! turns in one transaction: each claimed conversation gets an `incomplete` assistant
//! message (reason `interrupted`) and is released, and the process's holds are freed.
//! Whatever steps the dead turn had committed (tool calls and their results) stay.

use std::time::Duration;

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::prepared::sql;

/// Records that `process_id` is alive now (creating its row if a reaper removed it).
pub async fn heartbeat(conn: &mut AsyncPgConnection, process_id: Uuid) -> diesel::QueryResult<()> {
    sql("INSERT INTO server_processes (id) VALUES ($1) \
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()")
    .bind::<SqlUuid, _>(process_id)
    .execute(conn)
    .await
    .map(drop)
}

/// Removes the row of a process that stops cleanly.
pub async fn retire(conn: &mut AsyncPgConnection, process_id: Uuid) -> diesel::QueryResult<()> {
    sql("DELETE FROM server_processes WHERE id = $1")
        .bind::<SqlUuid, _>(process_id)
        .execute(conn)
        .await
        .map(drop)
}

/// What one reap ended.
#[derive(Debug, Default, QueryableByName)]
pub struct Reaped {
    /// Dead processes removed.
    #[diesel(sql_type = BigInt)]
    pub processes: i64,
    /// Their turns, stored as interrupted and released.
    #[diesel(sql_type = BigInt)]
    pub turns: i64,
    /// Budget tokens their holds had reserved.
    #[diesel(sql_type = BigInt)]
    pub freed: i64,
}

/// Ends the turns of every process (other than `me`) whose heartbeat is older than `timeout`.
/// Two processes reaping at once do not both end a turn: the first deletes the dead row and
/// the second finds nothing to delete. No index holds a conversation's process (a turn's
/// release would then write an index entry), so a reap that found a dead process scans the
/// conversations once; one that found none does not start the scan (`EXISTS`, evaluated
/// once).
pub async fn reap(
    conn: &mut AsyncPgConnection,
    me: Uuid,
    timeout: Duration,
) -> diesel::QueryResult<Reaped> {
    let secs = i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX).max(1);
    sql("WITH dead AS ( \
             DELETE FROM server_processes \
              WHERE heartbeat_at < now() - make_interval(secs => $2) AND id <> $1 \
             RETURNING id), \
         convs AS ( \
             UPDATE conversations c \
                SET active_turn_id = NULL, active_turn_at = NULL, active_process_id = NULL \
               FROM dead WHERE c.active_process_id = dead.id AND EXISTS (SELECT 1 FROM dead) \
             RETURNING c.id), \
         marked AS ( \
             INSERT INTO messages (id, conversation_id, role, content, status, status_reason, \
                                   history_cost) \
             SELECT gen_random_uuid(), id, 'assistant', '', 'incomplete', $3, 0 FROM convs \
             RETURNING 1), \
         gone AS ( \
             DELETE FROM budget_holds h USING dead WHERE h.process_id = dead.id \
             RETURNING h.user_id, h.period, h.period_start, h.amount), \
         sums AS ( \
             SELECT user_id, period, period_start, sum(amount)::BIGINT AS amount \
               FROM gone GROUP BY 1, 2, 3), \
         freed AS ( \
             UPDATE budget_periods b \
                SET reserved = GREATEST(b.reserved - sums.amount, 0), updated_at = now() \
               FROM sums WHERE b.user_id = sums.user_id AND b.period = sums.period \
                AND b.period_start = sums.period_start \
             RETURNING sums.amount) \
         SELECT (SELECT count(*) FROM dead)::BIGINT AS processes, \
                (SELECT count(*) FROM marked)::BIGINT AS turns, \
                COALESCE((SELECT sum(amount) FROM freed), 0)::BIGINT AS freed")
    .bind::<SqlUuid, _>(me)
    .bind::<BigInt, _>(secs)
    .bind::<Text, _>(INTERRUPTED)
    .get_result(conn)
    .await
}

/// Status reason of a turn whose process died.
pub const INTERRUPTED: &str = "interrupted";
