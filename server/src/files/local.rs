//! The first storage: a directory per user at `root/<user_id>`.
//!
//! Every access goes through a `cap_std::fs::Dir` opened on the user's
//! directory, so `..` escapes, absolute paths and symlinks leading outside
//! are refused by the OS-level lookup itself (openat-based), not merely
//! filtered; the store has validated each path up front for clear messages.
//!
//! Writes are atomic (temp file in `root/.tmp`, then rename into the jail).
//! Blocking filesystem work runs on `spawn_blocking`, with the user's lock moved
//! into the task so it is held until the work is really over.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use cap_std::fs::Dir;
use uuid::Uuid;

use super::local_fs::*;
use super::{FileEntry, Held, Quota, Storage, WorkspaceError, WorkspacePath, Written};

/// Directory under the root holding in-flight temp files.
const TMP_DIR: &str = ".tmp";

/// Every user's files in a directory of their own under one root.
pub struct LocalDir {
    root: Arc<Dir>,
    tmp: Arc<Dir>,
}

impl LocalDir {
    /// Opens (creating it with mode 0700 if needed) the root directory and removes stale
    /// temp files left by a crash.
    pub fn open(root: PathBuf) -> io::Result<Self> {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&root)?;
        let root = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        ensure_dir(&root, TMP_DIR)?;
        let tmp = root.open_dir(TMP_DIR)?;
        remove_stale_temp_files(&tmp);
        Ok(Self {
            root: Arc::new(root),
            tmp: Arc::new(tmp),
        })
    }

    /// Run `f` on the user's directory (created on first use) on the
    /// blocking pool.
    async fn blocking<T, F>(&self, user: Uuid, f: F) -> Result<T, WorkspaceError>
    where
        T: Send + 'static,
        F: FnOnce(&Dir) -> Result<T, WorkspaceError> + Send + 'static,
    {
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || {
            let name = user.to_string();
            ensure_dir(&root, &name).map_err(WorkspaceError::Io)?;
            let dir = root.open_dir(&name).map_err(WorkspaceError::Io)?;
            f(&dir)
        })
        .await
        .map_err(|e| WorkspaceError::Io(io::Error::other(e.to_string())))?
    }
}

#[async_trait]
impl Storage for LocalDir {
    async fn list(&self, user: Uuid) -> Result<Vec<FileEntry>, WorkspaceError> {
        self.blocking(user, |dir| {
            let mut out = Vec::new();
            walk(dir, "", 0, &mut out);
            out.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(out)
        })
        .await
    }

    async fn usage(&self, user: Uuid) -> Result<(u64, u64), WorkspaceError> {
        self.blocking(user, |dir| Ok(usage_of(dir))).await
    }

    async fn read(
        &self,
        user: Uuid,
        path: &WorkspacePath,
        cap: u64,
    ) -> Result<Vec<u8>, WorkspaceError> {
        let path = path.clone();
        self.blocking(user, move |dir| read_file(dir, &path, cap))
            .await
    }

    async fn write(
        &self,
        held: Held,
        user: Uuid,
        path: WorkspacePath,
        bytes: Vec<u8>,
        overwrite: bool,
        quota: Quota,
    ) -> Result<Written, WorkspaceError> {
        let tmp = Arc::clone(&self.tmp);
        self.blocking(user, move |dir| {
            let _held = held;
            write_file(dir, &tmp, &path, &bytes, overwrite, &quota)
        })
        .await
    }

    async fn delete(
        &self,
        held: Held,
        user: Uuid,
        path: WorkspacePath,
    ) -> Result<(), WorkspaceError> {
        self.blocking(user, move |dir| {
            let _held = held;
            delete_file(dir, &path)
        })
        .await
    }

    async fn remove_all(&self, held: Held, user: Uuid) -> Result<(), WorkspaceError> {
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || {
            let _held = held;
            match root.remove_dir_all(user.to_string()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(WorkspaceError::Io(e)),
                _ => Ok(()),
            }
        })
        .await
        .map_err(|e| WorkspaceError::Io(io::Error::other(e.to_string())))?
    }
}
