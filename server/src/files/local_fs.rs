//! The blocking filesystem work of a workspace, run on `spawn_blocking` by
//! [`LocalDir`](super::LocalDir): walking, reading, atomic writes and deletes inside
//! the user's `cap_std` jail, and mapping I/O errors to messages without server paths.

use std::io::{self, Read, Write};

use cap_std::fs::{Dir, DirBuilder, DirBuilderExt, OpenOptions, OpenOptionsExt};

use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::path::{quote, MAX_COMPONENTS};
use super::{FileEntry, Quota, WorkspaceError, WorkspacePath, Written};

/// Temp files older than this are removed at start-up.
const STALE_TMP_AGE: Duration = Duration::from_secs(3600);
/// Listing stops after this many files.
const MAX_LIST_ENTRIES: usize = 100_000;
/// Listing and usage descend into directories this many levels deep, which is exactly deep
/// enough to see every file a valid [`WorkspacePath`] can name (its last component is the
/// file): listing, usage and the quota agree on one view of the tree.
const MAX_DEPTH: usize = MAX_COMPONENTS - 1;
/// `ENOTDIR` and `EISDIR` (same value on Linux, macOS and the BSDs).
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;

/// Create `name` (mode 0700) inside `parent` unless it exists.
pub(super) fn ensure_dir(parent: &Dir, name: &str) -> io::Result<()> {
    match parent.create_dir_with(name, DirBuilder::new().mode(0o700)) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

pub(super) fn remove_stale_temp_files(tmp: &Dir) {
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
pub(super) fn map_io(err: io::Error, path: &WorkspacePath) -> WorkspaceError {
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

pub(super) fn is_a_directory(path: &WorkspacePath) -> WorkspaceError {
    WorkspaceError::InvalidPath(format!("{} is a directory", quote(path.as_str())))
}

pub(super) fn walk(dir: &Dir, prefix: &str, depth: usize, out: &mut Vec<FileEntry>) {
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

pub(super) fn usage_of(dir: &Dir) -> (u64, u64) {
    let mut files = Vec::new();
    walk(dir, "", 0, &mut files);
    let bytes = files.iter().map(|f| f.size).sum();
    (bytes, files.len() as u64)
}

pub(super) fn read_file(
    dir: &Dir,
    path: &WorkspacePath,
    cap: u64,
) -> Result<Vec<u8>, WorkspaceError> {
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

pub(super) fn write_file(
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

pub(super) fn write_temp(tmp: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut file = tmp.open_with(name, &options)?;
    file.write_all(bytes)?;
    file.sync_data()
}

pub(super) fn delete_file(dir: &Dir, path: &WorkspacePath) -> Result<(), WorkspaceError> {
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
