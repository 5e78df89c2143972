//! The background sweep every process runs: budget holds of turns whose process died, and
//! idempotency keys past their day.

use std::time::Duration;

use crate::budget::Clock;
use crate::db::Pool;

/// Frees budget holds whose process died, and forgets day-old idempotency keys, every `every`.
pub fn spawn(pool: Pool, clock: Clock, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let Ok(mut conn) = pool.get().await else {
                continue;
            };
            match crate::db::models::budget::sweep(&mut conn, clock()).await {
                Ok(0) => {}
                Ok(freed) => tracing::warn!(freed, "released budget holds of abandoned turns"),
                Err(e) => tracing::warn!(error = %e, "sweeping budget holds failed"),
            }
            match crate::db::models::budget_money::sweep(&mut conn, clock()).await {
                Ok(0) => {}
                Ok(freed) => tracing::warn!(freed, "released money holds of abandoned turns"),
                Err(e) => tracing::warn!(error = %e, "sweeping money holds failed"),
            }
            if let Err(e) = crate::db::models::idempotency::expire(&mut conn).await {
                tracing::warn!(error = %e, "forgetting old idempotency keys failed");
            }
        }
    });
}
