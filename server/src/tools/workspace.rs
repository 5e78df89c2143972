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
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cap_std::fs::{Dir, DirBuilder, DirBuilderExt, OpenOptions, OpenOptionsExt};
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
    /// Unexpected storage failure; details are logged, not shown.
    #[error("workspace storage error")]
    Io(#[source] io::Error),
}

impl WorkspaceError {
    /// Stable snake_case code (`invalid_path`, `not_found`, `already_exists`,
    /// `quota_exceeded`, `too_large`, `not_text`, `io`).
    pub fn code(&self) -> &'static str {
        match self {
            WorkspaceError::InvalidPath(_) => "invalid_path",
            WorkspaceError::NotFound => "not_found",
            WorkspaceError::AlreadyExists => "already_exists",
            WorkspaceError::QuotaExceeded(_) => "quota_exceeded",
            WorkspaceError::TooLarge => "too_large",
            WorkspaceError::NotText => "not_text",
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

fn parse(path: &str) -> Result<WorkspacePath, WorkspaceError> {
    WorkspacePath::parse(path).map_err(WorkspaceError::InvalidPath)
}

/// Create `name` (mode 0700) inside `parent` unless it exists.
fn ensure_dir(parent: &Dir, name: &str) -> io::Result<()> {
    match parent.create_dir_with(name, DirBuilder::new().mode(0o700)) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

fn remove_stale_temp_files(tmp: &Dir) {
    let Ok(entries) = tmp.entries() else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| {
                now.duration_since(t.into_std())
                    .is_ok_and(|age| age > STALE_TMP_AGE)
            })
            .unwrap_or(false);
        if stale {
            let _ = entry.remove_file();
        }
    }
}

/// Map an I/O error on `path` to a user-safe workspace error.
fn map_io(err: io::Error, path: &WorkspacePath) -> WorkspaceError {
    match err.kind() {
        io::ErrorKind::NotFound => WorkspaceError::NotFound,
        io::ErrorKind::AlreadyExists => WorkspaceError::AlreadyExists,
        io::ErrorKind::PermissionDenied => WorkspaceError::InvalidPath(format!(
            "path {} leads outside the workspace or is not accessible",
            quote(path.as_str())
        )),
        _ if err.raw_os_error() == Some(ENOTDIR) => WorkspaceError::NotFound,
        _ if err.raw_os_error() == Some(EISDIR) => is_a_directory(path),
        _ => WorkspaceError::Io(err),
    }
}

fn is_a_directory(path: &WorkspacePath) -> WorkspaceError {
    WorkspaceError::InvalidPath(format!("{} is a directory", quote(path.as_str())))
}

fn walk(dir: &Dir, prefix: &str, depth: usize, out: &mut Vec<FileEntry>) {
    let Ok(entries) = dir.entries() else { return };
    for entry in entries.flatten() {
        if out.len() >= MAX_LIST_ENTRIES {
            return;
        }
        let (Ok(kind), Ok(name)) = (entry.file_type(), entry.file_name().into_string()) else {
            continue;
        };
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        // `file_type` does not follow symlinks: links are neither.
        if kind.is_dir() && depth < MAX_DEPTH {
            if let Ok(sub) = entry.open_dir() {
                walk(&sub, &path, depth + 1, out);
            }
        } else if kind.is_file() {
            if let Ok(meta) = entry.metadata() {
                let modified = meta
                    .modified()
                    .map(|t| DateTime::<Utc>::from(t.into_std()))
                    .unwrap_or_default();
                out.push(FileEntry {
                    path,
                    size: meta.len(),
                    modified,
                });
            }
        }
    }
}

fn usage_of(dir: &Dir) -> (u64, u64) {
    let mut files = Vec::new();
    walk(dir, "", 0, &mut files);
    let bytes = files.iter().map(|f| f.size).sum();
    (bytes, files.len() as u64)
}

fn read_file(dir: &Dir, path: &WorkspacePath, cap: u64) -> Result<Vec<u8>, WorkspaceError> {
    let meta = dir.metadata(path.as_str()).map_err(|e| map_io(e, path))?;
    if meta.is_dir() {
        return Err(is_a_directory(path));
    }
    if !meta.is_file() {
        return Err(WorkspaceError::NotFound);
    }
    if meta.len() > cap {
        return Err(WorkspaceError::TooLarge);
    }
    let file = dir.open(path.as_str()).map_err(|e| map_io(e, path))?;
    let mut bytes = Vec::new();
    // `take` bounds the read even if the file grew since `metadata`.
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| map_io(e, path))?;
    if bytes.len() as u64 > cap {
        return Err(WorkspaceError::TooLarge);
    }
    Ok(bytes)
}

fn write_file(
    dir: &Dir,
    tmp: &Dir,
    path: &WorkspacePath,
    bytes: &[u8],
    overwrite: bool,
    quota: &Quota,
) -> Result<Written, WorkspaceError> {
    let existing = match dir.symlink_metadata(path.as_str()) {
        Ok(meta) if meta.is_dir() => return Err(is_a_directory(path)),
        // A symlink (never created by us) is replaced itself, not followed.
        Ok(meta) => Some(meta.is_file().then(|| meta.len())),
        Err(e) => match map_io(e, path) {
            // ENOTDIR maps to NotFound: a parent is a file, caught below.
            WorkspaceError::NotFound => None,
            other => return Err(other),
        },
    };
    if existing.is_some() && !overwrite {
        return Err(WorkspaceError::AlreadyExists);
    }
    let (used_bytes, used_files) = usage_of(dir);
    let new_len = bytes.len() as u64;
    let after = used_bytes
        .saturating_sub(existing.flatten().unwrap_or(0))
        .saturating_add(new_len);
    if after > quota.max_bytes {
        return Err(WorkspaceError::QuotaExceeded(format!(
            "writing {new_len} bytes would bring the workspace to {after} bytes (limit {})",
            quota.max_bytes
        )));
    }
    if existing.flatten().is_none() && used_files >= quota.max_files {
        return Err(WorkspaceError::QuotaExceeded(format!(
            "the workspace already holds {used_files} files (limit {})",
            quota.max_files
        )));
    }
    if let Some(parent) = path.parent() {
        dir.create_dir_with(parent, DirBuilder::new().recursive(true).mode(0o700))
            .map_err(|e| match map_io(e, path) {
                WorkspaceError::AlreadyExists | WorkspaceError::NotFound => {
                    WorkspaceError::InvalidPath(format!(
                        "a parent of {} is a file, not a directory",
                        quote(path.as_str())
                    ))
                }
                other => other,
            })?;
    }
    let tmp_name = format!("{}.tmp", Uuid::new_v4());
    let result =
        write_temp(tmp, &tmp_name, bytes).and_then(|()| tmp.rename(&tmp_name, dir, path.as_str()));
    if let Err(e) = result {
        let _ = tmp.remove_file(&tmp_name);
        return Err(map_io(e, path));
    }
    Ok(Written {
        path: path.as_str().to_owned(),
        size: new_len,
        replaced: existing.is_some(),
    })
}

fn write_temp(tmp: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut file = tmp.open_with(name, &options)?;
    file.write_all(bytes)?;
    file.sync_data()
}

fn delete_file(dir: &Dir, path: &WorkspacePath) -> Result<(), WorkspaceError> {
    let meta = dir
        .symlink_metadata(path.as_str())
        .map_err(|e| map_io(e, path))?;
    if meta.is_dir() {
        return Err(is_a_directory(path));
    }
    dir.remove_file(path.as_str())
        .map_err(|e| map_io(e, path))?;
    // Prune parent directories that are now empty (remove_dir fails on
    // non-empty ones, which ends the walk).
    let mut parent: Option<&Path> = path.parent();
    while let Some(p) = parent {
        if dir.remove_dir(p).is_err() {
            break;
        }
        parent = p.parent().filter(|p| !p.as_os_str().is_empty());
    }
    Ok(())
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;

#[path = "workspace_remove.rs"]
mod remove;
