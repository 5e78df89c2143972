//! The citations of a final answer (`crate::knowledge::citations`, then
//! `crate::websearch::citations`), stored with it. An answer without `[K…]` or `[W…]`
//! markers costs nothing here; a lookup that fails leaves the answer uncited rather than
//! failing the turn.

use serde_json::Value;
use uuid::Uuid;

/// The `citations` column of the answer `text` of `user`'s turn (NULL: none).
pub(super) async fn citations(pool: &crate::db::Pool, user: Uuid, text: &str) -> Option<Value> {
    let knowledge = !crate::knowledge::citations::markers(text).is_empty();
    let web = !crate::websearch::citations::markers(text).is_empty();
    if !knowledge && !web {
        return None;
    }
    let mut conn = pool.get().await.ok()?;
    let mut found: Vec<Value> = Vec::new();
    if knowledge {
        match crate::knowledge::citations::resolve(&mut conn, user, text).await {
            Ok(cited) => found.extend(cited.iter().filter_map(|c| serde_json::to_value(c).ok())),
            Err(e) => tracing::warn!(error = %e, "an answer's citations could not be resolved"),
        }
    }
    if web {
        match crate::websearch::citations::resolve(&mut conn, user, text, found.len()).await {
            Ok(cited) => found.extend(cited.iter().filter_map(|c| serde_json::to_value(c).ok())),
            Err(e) => tracing::warn!(error = %e, "an answer's web citations could not be resolved"),
        }
    }
    (!found.is_empty()).then_some(Value::Array(found))
}
