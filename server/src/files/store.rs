//! The file store's face: [`WorkspaceStore`]. Paths are validated up front
//! ([`WorkspacePath::parse`]) for clear error messages, sizes are checked before anything
//! is written, and a user's changes are serialised so the quota check and the write cannot
//! race within one process; the bytes themselves go to a [`Storage`].

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::image::{ImageDecoders, ImageLimits};
use super::text::{text_chunk, TextChunk};
use super::uploads::InFlight;
use super::{FileEntry, Held, LocalDir, Quota, Storage, WorkspaceError, WorkspacePath, Written};

/// Every user's workspace, in one storage.
pub struct WorkspaceStore {
    pub(super) storage: Arc<dyn Storage>,
    pub(super) quota: Quota,
    locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    /// Uploads being received ([`super::uploads`]).
    pub(super) uploads: InFlight,
    /// The limits and permits every image stored here is normalised under.
    images: ImageDecoders,
}

impl std::fmt::Debug for WorkspaceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceStore")
            .field("quota", &self.quota)
            .field("images", self.images.limits())
            .finish_non_exhaustive()
    }
}

impl WorkspaceStore {
    /// Workspaces in a local directory ([`LocalDir::open`]).
    pub fn new(root: PathBuf, quota: Quota) -> io::Result<Self> {
        Ok(Self::with_storage(Arc::new(LocalDir::open(root)?), quota))
    }

    /// Workspaces in `storage`.
    pub fn with_storage(storage: Arc<dyn Storage>, quota: Quota) -> Self {
        Self {
            storage,
            quota,
            locks: Mutex::new(HashMap::new()),
            uploads: InFlight::default(),
            images: ImageDecoders::default(),
        }
    }

    /// The same store, normalising images under `limits` (`[images]`) instead of the
    /// defaults.
    pub fn with_image_limits(mut self, limits: ImageLimits) -> Self {
        self.images = ImageDecoders::new(limits);
        self
    }

    /// The limits applied to each workspace.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// The image decoders: uploads and images from tools are normalised through them.
    pub fn images(&self) -> &ImageDecoders {
        &self.images
    }

    /// All files in `user`'s workspace, sorted by path. Symlinks and special
    /// files are not listed.
    pub async fn list(&self, user: Uuid) -> Result<Vec<FileEntry>, WorkspaceError> {
        self.storage.list(user).await
    }

    /// Total `(bytes, files)` used by `user`.
    pub async fn usage(&self, user: Uuid) -> Result<(u64, u64), WorkspaceError> {
        self.storage.usage(user).await
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
        self.storage.read(user, &path, cap).await
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
        let held = self.hold(user).await;
        self.storage
            .write(held, user, path, bytes, overwrite, self.quota)
            .await
    }

    /// Delete a file; directories left empty are removed too.
    pub async fn delete(&self, user: Uuid, path: &str) -> Result<(), WorkspaceError> {
        let path = parse(path)?;
        // Before the lock: an upload of the path still arriving writes nothing.
        self.uploads.cancel(user, &path);
        let held = self.hold(user).await;
        self.storage.delete(held, user, path).await
    }

    /// The user's lock, for one change (the storage keeps it until its work is over).
    pub(super) async fn hold(&self, user: Uuid) -> Held {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(locks.entry(user).or_default())
        };
        Held(lock.lock_owned().await)
    }
}

pub(super) fn parse(path: &str) -> Result<WorkspacePath, WorkspaceError> {
    WorkspacePath::parse(path).map_err(WorkspaceError::InvalidPath)
}
