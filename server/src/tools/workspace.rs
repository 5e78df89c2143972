//! Per-user file workspaces: a directory per user at `root/<user_id>`.
//!
//! Every access goes through a `cap_std::fs::Dir` opened on the user's
//! directory, so `..` escapes, absolute paths and symlinks leading outside
//! are refused by the OS-level lookup itself (openat-based), not merely
//! filtered. Paths are additionally validated up front by
//! [`WorkspacePath::parse`] for clear error messages.
//!
//! Writes are atomic (temp file in `root/.tmp`, then rename into the jail)
//! and serialised per user so the quota check and the write cannot race
//! within one process. Blocking filesystem work runs on `spawn_blocking`.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::workspace_path::{quote, WorkspacePath};
use super::workspace_text::{text_chunk, TextChunk};
use super::ToolError;

/// Directory under the root holding in-flight temp files.
const TMP_DIR: &str = ".tmp";
/// Temp files older than this are removed at start-up.
const STALE_TMP_AGE: Duration = Duration::from_secs(3600);
/// Listing stops after this many files.
const MAX_LIST_ENTRIES: usize = 100_000;
/// Listing and usage descend into directories this many levels deep, which is exactly deep
/// enough to see every file a valid [`WorkspacePath`] can name (its last component is the
/// file): listing, usage and the quota agree on one view of the tree.
const MAX_DEPTH: usize = super::workspace_path::MAX_COMPONENTS - 1;
/// `ENOTDIR` and `EISDIR` (same value on Linux, macOS and the BSDs).
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;

/// Storage limits applied to each user's workspace (`[tools.quota]` in the settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quota {
    /// Total bytes of all files.
    pub max_bytes: u64,
    /// Number of files.
    pub max_files: u64,
    /// Size of a single file (also the largest file that will be read).
    pub max_file_bytes: u64,
}

impl Default for Quota {
    /// 100 MiB, 1000 files, 10 MiB per file.
    fn default() -> Self {
        Self {
            max_bytes: 100 * 1024 * 1024,
            max_files: 1000,
            max_file_bytes: 10 * 1024 * 1024,
        }
    }
}

/// A file in a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FileEntry {
    /// Path relative to the workspace, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time (the Unix epoch if unavailable).
    pub modified: DateTime<Utc>,
}

/// Result of [`WorkspaceStore::write`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Written {
    /// The normalised path written.
    pub path: String,
    /// Bytes written.
    pub size: u64,
    /// Whether an existing file was replaced.
    pub replaced: bool,
}

/// Why a workspace operation failed. Messages never contain server paths.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The path is malformed or leads outside the workspace.
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// No such file.
    #[error("file not found")]
    NotFound,
    /// The file exists and overwriting was not requested.
    #[error("file already exists")]
    AlreadyExists,
    /// The write would exceed the workspace quota.
    #[error("workspace quota exceeded: {0}")]
    QuotaExceeded(String),
    /// The file is larger than the per-file limit.
    #[error("file is too large")]
    TooLarge,
    /// The file is not valid UTF-8 text.
    #[error("not a text file")]
    NotText,
    /// The path was deleted while its upload arrived: the upload wrote nothing.
    #[error("the upload was cancelled: the file was deleted while it arrived")]
    UploadCancelled,
    /// Unexpected storage failure; details are logged, not shown.
    #[error("workspace storage error")]
    Io(#[source] io::Error),
}

impl WorkspaceError {
    /// Stable snake_case code (`invalid_path`, `not_found`, `already_exists`,
    /// `quota_exceeded`, `too_large`, `not_text`, `upload_cancelled`, `io`).
    pub fn code(&self) -> &'static str {
        match self {
            WorkspaceError::InvalidPath(_) => "invalid_path",
            WorkspaceError::NotFound => "not_found",
            WorkspaceError::AlreadyExists => "already_exists",
            WorkspaceError::QuotaExceeded(_) => "quota_exceeded",
            WorkspaceError::TooLarge => "too_large",
            WorkspaceError::NotText => "not_text",
            WorkspaceError::UploadCancelled => "upload_cancelled",
            WorkspaceError::Io(_) => "io",
        }
    }

    /// The tool-facing error for an operation on `path`: bad paths become
    /// [`ToolError::InvalidArguments`], everything else [`ToolError::Failed`],
    /// with a message naming the path.
    pub fn into_tool_error(self, path: &str, quota: &Quota) -> ToolError {
        let p = quote(path);
        match self {
            WorkspaceError::InvalidPath(m) => ToolError::InvalidArguments(format!("path: {m}")),
            WorkspaceError::NotFound => ToolError::Failed(format!("file not found: {p}")),
            WorkspaceError::AlreadyExists => ToolError::Failed(format!(
                "{p} already exists; set overwrite to true to replace it"
            )),
            WorkspaceError::QuotaExceeded(m) => {
                ToolError::Failed(format!("cannot write {p}: workspace quota exceeded: {m}"))
            }
            WorkspaceError::TooLarge => ToolError::Failed(format!(
                "{p} is too large (limit {} bytes per file)",
                quota.max_file_bytes
            )),
            WorkspaceError::NotText => ToolError::Failed(format!("{p} is not a text file")),
            WorkspaceError::UploadCancelled => {
                ToolError::Failed(format!("{p} was deleted while it was being written"))
            }
            WorkspaceError::Io(e) => {
                tracing::warn!(error = %e, path, "workspace i/o error");
                ToolError::Failed(format!("storage error while accessing {p}"))
            }
        }
    }
}

/// Per-user file workspaces under one root directory.
pub struct WorkspaceStore {
    root: Arc<Dir>,
    tmp: Arc<Dir>,
    quota: Quota,
    locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    /// Uploads being received ([`uploads`]).
    uploads: uploads::InFlight,
}

impl std::fmt::Debug for WorkspaceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceStore")
            .field("quota", &self.quota)
            .finish_non_exhaustive()
    }
}

impl WorkspaceStore {
    /// Open (creating it with mode 0700 if needed) the root directory and
    /// remove stale temp files left by a crash.
    pub fn new(root: PathBuf, quota: Quota) -> io::Result<Self> {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&root)?;
        let root = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        ensure_dir(&root, TMP_DIR)?;
        let tmp = root.open_dir(TMP_DIR)?;
        remove_stale_temp_files(&tmp);
        Ok(Self {
            root: Arc::new(root),
            tmp: Arc::new(tmp),
            quota,
            locks: Mutex::new(HashMap::new()),
            uploads: uploads::InFlight::default(),
        })
    }

    /// The limits applied to each workspace.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// All files in `user`'s workspace, sorted by path. Symlinks and special
    /// files are not listed.
    pub async fn list(&self, user: Uuid) -> Result<Vec<FileEntry>, WorkspaceError> {
        self.blocking(user, |dir| {
            let mut out = Vec::new();
            walk(dir, "", 0, &mut out);
            out.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(out)
        })
        .await
    }

    /// Total `(bytes, files)` used by `user`.
    pub async fn usage(&self, user: Uuid) -> Result<(u64, u64), WorkspaceError> {
        self.blocking(user, |dir| Ok(usage_of(dir))).await
    }

    /// The content of a file (at most [`Quota::max_file_bytes`]).
    pub async fn read(&self, user: Uuid, path: &str) -> Result<Vec<u8>, WorkspaceError> {
        self.read_capped(user, path, self.quota.max_file_bytes)
            .await
    }

    /// The content of a file, or [`WorkspaceError::TooLarge`] if it is
    /// larger than `max_bytes` (or than [`Quota::max_file_bytes`]).
    pub async fn read_capped(
        &self,
        user: Uuid,
        path: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, WorkspaceError> {
        let path = parse(path)?;
        let cap = max_bytes.min(self.quota.max_file_bytes);
        self.blocking(user, move |dir| read_file(dir, &path, cap))
            .await
    }

    /// One page of a UTF-8 text file: at most `limit` bytes from byte
    /// `offset`, ending at a line break when possible (see [`TextChunk`]).
    /// Invalid UTF-8 is [`WorkspaceError::NotText`].
    pub async fn read_text(
        &self,
        user: Uuid,
        path: &str,
        offset: u64,
        limit: usize,
    ) -> Result<TextChunk, WorkspaceError> {
        let bytes = self.read(user, path).await?;
        let text = String::from_utf8(bytes).map_err(|_| WorkspaceError::NotText)?;
        Ok(text_chunk(&text, offset, limit))
    }

    /// Create or (with `overwrite`) replace a file, creating parent
    /// directories. Size and quota are checked before anything is written;
    /// the file appears atomically.
    pub async fn write(
        &self,
        user: Uuid,
        path: &str,
        bytes: Vec<u8>,
        overwrite: bool,
    ) -> Result<Written, WorkspaceError> {
        let path = parse(path)?;
        if bytes.len() as u64 > self.quota.max_file_bytes {
            return Err(WorkspaceError::TooLarge);
        }
        // The guard moves into the blocking task so it is held until the
        // filesystem work is really over, even if this future is dropped.
        let guard = self.user_lock(user).lock_owned().await;
        let tmp = Arc::clone(&self.tmp);
        let quota = self.quota;
        self.blocking(user, move |dir| {
            let _guard = guard;
            write_file(dir, &tmp, &path, &bytes, overwrite, &quota)
        })
        .await
    }

    /// Delete a file; directories left empty are removed too.
    pub async fn delete(&self, user: Uuid, path: &str) -> Result<(), WorkspaceError> {
        let path = parse(path)?;
        // Before the lock: an upload of the path still arriving writes nothing.
        self.uploads.cancel(user, &path);
        let guard = self.user_lock(user).lock_owned().await;
        self.blocking(user, move |dir| {
            let _guard = guard;
            delete_file(dir, &path)
        })
        .await
    }

    fn user_lock(&self, user: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(user).or_default())
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

#[path = "workspace_fs.rs"]
mod fs_ops;
use fs_ops::*;

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;

#[path = "workspace_remove.rs"]
mod remove;

#[path = "workspace_uploads.rs"]
mod uploads;
pub use uploads::UploadTicket;
