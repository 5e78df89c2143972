//! The citations of a final answer (`crate::knowledge::citations`), stored with it. An
//! answer without `[K…]` markers costs nothing here; a lookup that fails leaves the answer
//! uncited rather than failing the turn.

use serde_json::Value;
use uuid::Uuid;

/// The `citations` column of the answer `text` of `user`'s turn (NULL: none).
pub(super) async fn citations(pool: &crate::db::Pool, user: Uuid, text: &str) -> Option<Value> {
    if crate::knowledge::citations::markers(text).is_empty() {
        return None;
    }
    let mut conn = pool.get().await.ok()?;
    match crate::knowledge::citations::resolve(&mut conn, user, text).await {
        Ok(found) if !found.is_empty() => serde_json::to_value(found).ok(),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "an answer's citations could not be resolved");
            None
        }
    }
}
