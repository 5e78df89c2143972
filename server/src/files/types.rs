//! The words of the file store: a workspace's limits, a file as listed, a write's outcome and
//! why an operation failed.

use std::io;

use chrono::{DateTime, Utc};
use serde::Serialize;

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
}
