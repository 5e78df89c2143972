//! Removing a whole workspace, when an admin deletes its account.

use uuid::Uuid;

use super::{WorkspaceError, WorkspaceStore};

impl WorkspaceStore {
    /// Deletes every file of `user` and the workspace itself; a workspace never used is fine.
    pub async fn remove_all(&self, user: Uuid) -> Result<(), WorkspaceError> {
        let held = self.hold(user).await;
        self.storage.remove_all(held, user).await
    }
}
