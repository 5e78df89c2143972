//! Files attached to the messages of a shared conversation, downloaded through the link:
//! only a file some user message of the snapshot was sent with, read from the owner's
//! workspace (the same jail the file tools use), and only while it is still the size it was
//! sent at — a file the owner replaced after sharing is not what they shared. Each download
//! is a view, recorded in the download's transaction.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::model::ShareRow;
use super::read::{open, record_view, Action, Viewer};
use super::SharingError;
use crate::tools::{WorkspaceError, WorkspaceStore};

/// A file as a link serves it.
#[derive(Debug)]
pub struct SharedFile {
    /// The last component of its path (what the download is named).
    pub name: String,
    pub bytes: Vec<u8>,
}

#[derive(QueryableByName)]
struct Sent {
    #[diesel(sql_type = Nullable<BigInt>)]
    bytes: Option<i64>,
}

/// The size `path` had when the latest message of the snapshot that attached it was sent;
/// 404 when no message of the snapshot attached it.
async fn attached_size(
    conn: &mut AsyncPgConnection,
    share: &ShareRow,
    path: &str,
) -> Result<Option<i64>, SharingError> {
    let sent: Option<Sent> = diesel::sql_query(
        "SELECT (a->>'bytes')::BIGINT AS bytes \
           FROM messages m \
          CROSS JOIN LATERAL jsonb_array_elements( \
                CASE WHEN jsonb_typeof(m.attachments) = 'array' THEN m.attachments \
                     ELSE '[]'::jsonb END) a \
          WHERE m.conversation_id = $1 AND m.seq <= $2 AND m.role = 'user' \
            AND m.attachments IS NOT NULL AND a->>'path' = $3 \
          ORDER BY m.seq DESC LIMIT 1",
    )
    .bind::<SqlUuid, _>(share.conversation_id)
    .bind::<BigInt, _>(share.snapshot_seq)
    .bind::<Text, _>(path)
    .get_result(conn)
    .await
    .optional()?;
    sent.map(|s| s.bytes).ok_or(SharingError::NotFound("file"))
}

/// The file `path` attached in the snapshot of link `id`, for `viewer`.
pub async fn fetch(
    conn: &mut AsyncPgConnection,
    store: &WorkspaceStore,
    id: &str,
    path: &str,
    viewer: &Viewer,
    now: DateTime<Utc>,
) -> Result<SharedFile, SharingError> {
    let (id, path, viewer) = (id.to_owned(), path.to_owned(), viewer.clone());
    conn.transaction(|conn| {
        async move {
            let opened = open(conn, &id, &viewer, now).await?;
            let sent = attached_size(conn, &opened.share, &path).await?;
            let bytes = read_owner_file(store, opened.share.owner_id, &path).await?;
            if sent.is_some_and(|n| u64::try_from(n).ok() != Some(bytes.len() as u64)) {
                return Err(SharingError::FileChanged);
            }
            record_view(conn, &opened.share.id, &viewer, Action::File(&path), now).await?;
            let name = path.rsplit('/').next().unwrap_or("file").to_owned();
            Ok(SharedFile { name, bytes })
        }
        .scope_boxed()
    })
    .await
}

async fn read_owner_file(
    store: &WorkspaceStore,
    owner: Uuid,
    path: &str,
) -> Result<Vec<u8>, SharingError> {
    store.read(owner, path).await.map_err(|e| match e {
        WorkspaceError::NotFound | WorkspaceError::TooLarge => SharingError::FileChanged,
        WorkspaceError::InvalidPath(_) => SharingError::NotFound("file"),
        other => SharingError::Storage(other.to_string()),
    })
}
