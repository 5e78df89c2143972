//! Shared helpers for the built-in tool tests.

use std::sync::Arc;

use crate::files::{Quota, WorkspaceStore};
use crate::tools::ToolContext;

/// A context for a fresh random user.
pub fn ctx() -> ToolContext {
    ToolContext {
        user_id: uuid::Uuid::new_v4(),
        username: "tester".into(),
        conversation_id: uuid::Uuid::new_v4(),
    }
}

/// A store with roomy limits under a temp dir (kept alive by the first value).
pub fn store() -> (tempfile::TempDir, Arc<WorkspaceStore>) {
    store_with(Quota {
        max_bytes: 64 << 20,
        max_files: 1000,
        max_file_bytes: 16 << 20,
    })
}

/// A store with the given limits under a temp dir.
pub fn store_with(quota: Quota) -> (tempfile::TempDir, Arc<WorkspaceStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = WorkspaceStore::new(dir.path().join("ws"), quota).unwrap();
    (dir, Arc::new(store))
}
