//! Where a workspace's bytes live. The store ([`super::WorkspaceStore`]) has parsed every
//! path before a storage sees it, and holds the user's lock around each change; a storage
//! keeps its own files inside the user's space and checks the quota in the same step as the
//! write, so the check and the write see the same files.

use async_trait::async_trait;
use uuid::Uuid;

use super::{FileEntry, Quota, WorkspaceError, WorkspacePath, Written};

/// The user's lock, held for a change. A storage keeps it until its work is really over
/// (a blocking task outlives a dropped request), so two changes of one user never overlap.
pub struct Held(#[allow(dead_code)] pub(super) tokio::sync::OwnedMutexGuard<()>);

/// A place for every user's files.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Every file of `user`, sorted by path (links and special files left out).
    async fn list(&self, user: Uuid) -> Result<Vec<FileEntry>, WorkspaceError>;

    /// Total `(bytes, files)` used by `user`, as the quota counts them.
    async fn usage(&self, user: Uuid) -> Result<(u64, u64), WorkspaceError>;

    /// A file's content, or [`WorkspaceError::TooLarge`] when it is larger than `cap`.
    async fn read(
        &self,
        user: Uuid,
        path: &WorkspacePath,
        cap: u64,
    ) -> Result<Vec<u8>, WorkspaceError>;

    /// Creates or (with `overwrite`) replaces a file, its parent directories too, unless the
    /// user's files with it would exceed `quota`; the file appears whole or not at all.
    async fn write(
        &self,
        held: Held,
        user: Uuid,
        path: WorkspacePath,
        bytes: Vec<u8>,
        overwrite: bool,
        quota: Quota,
    ) -> Result<Written, WorkspaceError>;

    /// Deletes a file, and the directories it leaves empty.
    async fn delete(
        &self,
        held: Held,
        user: Uuid,
        path: WorkspacePath,
    ) -> Result<(), WorkspaceError>;

    /// Deletes every file of `user`; a workspace never used is fine.
    async fn remove_all(&self, held: Held, user: Uuid) -> Result<(), WorkspaceError>;
}
