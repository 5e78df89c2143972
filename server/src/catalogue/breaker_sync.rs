//! Providers' circuit breakers shared by every process: a process that opens or closes one
//! writes `provider_breakers` and says `breakers` on the channel; each process then reads the
//! table and takes what it says ([`super::breaker::Breaker::adopt`]). A process that
//! starts, or whose listener reconnects, reads it too.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::breaker::{Breakers, Transition};
use crate::cluster::channel::{self, Signal};
use crate::db::prepared::sql;

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    provider: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    open_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    reason: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
}

/// Writes a breaker's change and tells every process.
pub async fn publish(
    conn: &mut AsyncPgConnection,
    provider: &str,
    change: &Transition,
) -> diesel::QueryResult<()> {
    let (until, reason, at) = match change {
        Transition::Opened { until, reason, at } => (Some(*until), Some(reason.as_str()), *at),
        Transition::Closed { at } => (None, None, *at),
    };
    // Written in the order the changes happened, whichever write lands first.
    sql(
        "INSERT INTO provider_breakers (provider, open_until, reason, updated_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (provider) DO UPDATE \
            SET open_until = EXCLUDED.open_until, reason = EXCLUDED.reason, \
                updated_at = EXCLUDED.updated_at \
          WHERE provider_breakers.updated_at < EXCLUDED.updated_at",
    )
    .bind::<Text, _>(provider)
    .bind::<Nullable<Timestamptz>, _>(until)
    .bind::<Nullable<Text>, _>(reason)
    .bind::<Timestamptz, _>(at)
    .execute(conn)
    .await?;
    channel::signal(conn, Signal::BreakersChanged).await
}

/// Reads every breaker's shared state and takes it here.
pub async fn adopt_all(
    conn: &mut AsyncPgConnection,
    breakers: &Breakers,
) -> diesel::QueryResult<()> {
    let rows: Vec<Row> =
        sql("SELECT provider, open_until, reason, updated_at FROM provider_breakers")
            .load(conn)
            .await?;
    for row in rows {
        if let Some(b) = breakers.get(&row.provider) {
            b.adopt(row.open_until, row.reason, row.updated_at);
        }
    }
    Ok(())
}

/// Publishes a change in the background (the call that caused it does not wait); a lost
/// write only means the other processes find out by themselves.
pub fn spawn_publish(pool: crate::db::Pool, provider: String, change: Transition) {
    tokio::spawn(async move {
        let done = match pool.get().await {
            Ok(mut conn) => publish(&mut conn, &provider, &change)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, provider, "could not share a circuit breaker's change");
        }
    });
}

/// Re-reads the shared breakers in the background.
pub fn spawn_adopt(pool: crate::db::Pool, breakers: Arc<Breakers>) {
    tokio::spawn(async move {
        let done = match pool.get().await {
            Ok(mut conn) => adopt_all(&mut conn, &breakers)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, "could not read the shared circuit breakers");
        }
    });
}
