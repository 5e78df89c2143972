//! The code interpreter's own audit trail (`sandbox_runs`): one row per run, with the whole
//! code and the hashes of every file in and out, beside the tool-call row in `audit_log`.

use diesel::sql_types::{BigInt, Bool, Integer, Jsonb, Nullable, Numeric, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::db::prepared::sql;

/// One run, as it is recorded.
#[derive(Debug, Clone)]
pub struct NewSandboxRun {
    pub user_id: Uuid,
    pub username: String,
    pub conversation_id: Uuid,
    pub code: String,
    pub code_sha256: String,
    /// `[{path, bytes, sha256}]`
    pub inputs: serde_json::Value,
    /// `[{path, bytes, sha256, mime}]`
    pub outputs: serde_json::Value,
    /// Output entries not saved, with why.
    pub skipped: serde_json::Value,
    /// As the `agentchat_sandbox_runs_total{outcome}` label.
    pub outcome: String,
    pub error: Option<String>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub limit_hit: Option<String>,
    pub duration_ms: i64,
    pub cpu_ms: i64,
    pub max_rss_bytes: i64,
    pub queue_wait_ms: i64,
    pub isolation: String,
    pub cost: Option<Decimal>,
    pub currency: Option<String>,
}

pub async fn insert(conn: &mut AsyncPgConnection, run: &NewSandboxRun) -> diesel::QueryResult<()> {
    // Raw SQL: prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql(
        "INSERT INTO sandbox_runs (user_id, username, conversation_id, code, code_sha256, \
             inputs, outputs, skipped, outcome, error, exit_code, timed_out, limit_hit, \
             duration_ms, cpu_ms, max_rss_bytes, queue_wait_ms, isolation, cost, currency) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                 $18, $19, $20)",
    )
    .bind::<SqlUuid, _>(run.user_id)
    .bind::<Text, _>(run.username.clone())
    .bind::<SqlUuid, _>(run.conversation_id)
    .bind::<Text, _>(run.code.clone())
    .bind::<Text, _>(run.code_sha256.clone())
    .bind::<Jsonb, _>(run.inputs.clone())
    .bind::<Jsonb, _>(run.outputs.clone())
    .bind::<Jsonb, _>(run.skipped.clone())
    .bind::<Text, _>(run.outcome.clone())
    .bind::<Nullable<Text>, _>(run.error.clone())
    .bind::<Nullable<Integer>, _>(run.exit_code)
    .bind::<Bool, _>(run.timed_out)
    .bind::<Nullable<Text>, _>(run.limit_hit.clone())
    .bind::<BigInt, _>(run.duration_ms)
    .bind::<BigInt, _>(run.cpu_ms)
    .bind::<BigInt, _>(run.max_rss_bytes)
    .bind::<BigInt, _>(run.queue_wait_ms)
    .bind::<Text, _>(run.isolation.clone())
    .bind::<Nullable<Numeric>, _>(run.cost)
    .bind::<Nullable<Text>, _>(run.currency.clone())
    .execute(conn)
    .await
    .map(drop)
}
