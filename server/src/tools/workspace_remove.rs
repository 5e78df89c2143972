//! Removing a whole workspace, when an admin deletes its account.

use std::io;
use std::sync::Arc;

use uuid::Uuid;

use super::{WorkspaceError, WorkspaceStore};

impl WorkspaceStore {
    /// Deletes every file of `user` and the directory itself; a workspace never used is fine.
    pub async fn remove_all(&self, user: Uuid) -> Result<(), WorkspaceError> {
        let guard = self.user_lock(user).lock_owned().await;
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            match root.remove_dir_all(user.to_string()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(WorkspaceError::Io(e)),
                _ => Ok(()),
            }
        })
        .await
        .map_err(|e| WorkspaceError::Io(io::Error::other(e.to_string())))?
    }
}
