//! Uploads in flight, so that deleting a file also stops an upload of it that is still
//! being received. A browser that cancels an upload aborts its request and deletes the
//! path; but when the whole body had already arrived, the server would write the file after
//! the delete and it would stay. The delete marks the path's uploads cancelled before it
//! takes the user's lock, and an upload checks the mark under that lock, just before its
//! write: whichever gets the lock first, no file is left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use serde::Serialize;

use super::image::{self, ImageError, ImageInfo};
use super::store::parse;
use super::{WorkspaceError, WorkspacePath, WorkspaceStore, Written};

/// A user's path, as parsed.
type UploadKey = (Uuid, String);
/// The path's cancel mark, and how many uploads of it are arriving.
type Arriving = (Arc<AtomicBool>, usize);

/// The uploads of each user's paths being received now, with their cancel mark.
#[derive(Default)]
pub(super) struct InFlight {
    uploads: Mutex<HashMap<UploadKey, Arriving>>,
}

/// One upload being received; dropping it ends its registration.
pub struct UploadTicket<'a> {
    store: &'a WorkspaceStore,
    user: Uuid,
    path: WorkspacePath,
    cancelled: Arc<AtomicBool>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<UploadKey, Arriving>> {
        self.uploads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks every upload of `user`'s `path` in flight cancelled.
    pub(super) fn cancel(&self, user: Uuid, path: &WorkspacePath) {
        if let Some((flag, _)) = self.lock().get(&(user, path.as_str().to_owned())) {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

impl WorkspaceStore {
    /// Registers an upload of `path`, before its body is read.
    pub fn begin_upload(&self, user: Uuid, path: &str) -> Result<UploadTicket<'_>, WorkspaceError> {
        let path = parse(path)?;
        let mut uploads = self.uploads.lock();
        let entry = uploads
            .entry((user, path.as_str().to_owned()))
            .or_insert_with(|| (Arc::new(AtomicBool::new(false)), 0));
        entry.1 += 1;
        let cancelled = Arc::clone(&entry.0);
        drop(uploads);
        Ok(UploadTicket {
            store: self,
            user,
            path,
            cancelled,
        })
    }
}

/// What an upload stored: the file, and for an image what it became.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Uploaded {
    #[serde(flatten)]
    pub written: Written,
    /// Set for an image (PNG, JPEG, WebP, GIF), normalised before it was stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageInfo>,
}

/// Why an upload stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Image(#[from] ImageError),
}

impl UploadTicket<'_> {
    /// Stores the received body: an image (by its name) normalised first
    /// ([`image::ImageDecoders::normalise`]), under a name whose extension matches what is stored; any
    /// other file as it came.
    pub async fn store(&self, bytes: Vec<u8>) -> Result<Uploaded, UploadError> {
        let Some(claim) = image::claimed(self.path.as_str()) else {
            let written = self.write(bytes).await?;
            return Ok(Uploaded {
                written,
                image: None,
            });
        };
        let format = claim?;
        let normalised = self.store.images().normalise(bytes, format).await?;
        let target = image::stored_path(self.path.as_str(), format, normalised.extension);
        let path = parse(&target)?;
        let written = self.write_at(path, normalised.bytes).await?;
        Ok(Uploaded {
            written,
            image: Some(normalised.info),
        })
    }

    /// Writes the received body (replacing a file there), unless the path was deleted while
    /// it arrived: then [`WorkspaceError::UploadCancelled`] and nothing is written.
    pub async fn write(&self, bytes: Vec<u8>) -> Result<Written, WorkspaceError> {
        self.write_at(self.path.clone(), bytes).await
    }

    /// [`Self::write`] to `path` (the upload's own, or its image's stored name).
    async fn write_at(
        &self,
        path: WorkspacePath,
        bytes: Vec<u8>,
    ) -> Result<Written, WorkspaceError> {
        let store = self.store;
        if bytes.len() as u64 > store.quota.max_file_bytes {
            return Err(WorkspaceError::TooLarge);
        }
        let held = store.hold(self.user).await;
        if self.cancelled.load(Ordering::SeqCst) {
            return Err(WorkspaceError::UploadCancelled);
        }
        store
            .storage
            .write(held, self.user, path, bytes, true, store.quota)
            .await
    }
}

impl Drop for UploadTicket<'_> {
    fn drop(&mut self) {
        let mut uploads = self.store.uploads.lock();
        let key = (self.user, self.path.as_str().to_owned());
        if let Some(entry) = uploads.get_mut(&key) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                uploads.remove(&key);
            }
        }
    }
}
