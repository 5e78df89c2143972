//! Files attached to the messages of a shared conversation, downloaded through the link:
//! only a file some user message of the snapshot was sent with (or, unless the link hides
//! the tools' outputs, one a tool result of the snapshot lists as saved), read from the owner's
//! workspace (the same jail the file tools use), and only while it is still the file that
//! was sent — a file the owner replaced after sharing is not what they shared (410). A
//! message records each file's SHA-256 when it is sent, and the download must match it.
//! Messages stored before digests were recorded know only the size: their files are served
//! while the size matches (what those links promised when they were made). Each download is
//! a reading, admitted and counted in the download's transaction.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::gate::ReadGate;
use super::model::ShareRow;
use super::read::{admit, open, Viewer};
use super::views::{self, Action};
use super::SharingError;
use crate::files::{WorkspaceError, WorkspaceStore};

/// A file as a link serves it.
#[derive(Debug)]
pub struct SharedFile {
    /// The last component of its path (what the download is named).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// What the message that attached a file recorded of it.
#[derive(QueryableByName)]
struct Sent {
    #[diesel(sql_type = Nullable<BigInt>)]
    bytes: Option<i64>,
    /// Lowercase hex; none on messages stored before digests were recorded.
    #[diesel(sql_type = Nullable<Text>)]
    sha256: Option<String>,
}

impl Sent {
    /// Whether `content` is the file that was sent.
    fn matches(&self, content: &[u8]) -> bool {
        if let Some(digest) = &self.sha256 {
            return hex(&Sha256::digest(content)) == digest.to_ascii_lowercase();
        }
        self.bytes
            .is_none_or(|n| u64::try_from(n).ok() == Some(content.len() as u64))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the latest message of the snapshot that attached `path` recorded of it; 404 when
/// no message of the snapshot attached it.
async fn attached(
    conn: &mut AsyncPgConnection,
    share: &ShareRow,
    path: &str,
) -> Result<Sent, SharingError> {
    let sent: Option<Sent> = diesel::sql_query(
        "SELECT (a->>'bytes')::BIGINT AS bytes, a->>'sha256' AS sha256 \
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
    match sent {
        Some(sent) => Ok(sent),
        None if !share.redact_tools => produced(conn, share, path).await,
        None => Err(SharingError::NotFound("file")),
    }
}

/// The tool result text of the snapshot that mentions `path` (the latest first).
#[derive(QueryableByName)]
struct ToolText {
    #[diesel(sql_type = Text)]
    content: String,
}

/// What the latest tool result of the snapshot that saved `path` (a run's outputs, listed in
/// its `data.files`) said of it: its size, which the download must still have. 404 when no
/// tool result of the snapshot lists it.
async fn produced(
    conn: &mut AsyncPgConnection,
    share: &ShareRow,
    path: &str,
) -> Result<Sent, SharingError> {
    let texts: Vec<ToolText> = diesel::sql_query(
        "SELECT m.content FROM messages m \
          WHERE m.conversation_id = $1 AND m.seq <= $2 AND m.role = 'tool' \
            AND strpos(m.content, $3) > 0 \
          ORDER BY m.seq DESC LIMIT 20",
    )
    .bind::<SqlUuid, _>(share.conversation_id)
    .bind::<BigInt, _>(share.snapshot_seq)
    .bind::<Text, _>(path)
    .load(conn)
    .await?;
    texts
        .iter()
        .find_map(|t| saved_size(&t.content, path))
        .map(|bytes| Sent {
            bytes: Some(bytes),
            sha256: None,
        })
        .ok_or(SharingError::NotFound("file"))
}

/// The size a tool result envelope (`{"success":true,"data":{"files":[{path, bytes}]}}`)
/// records for `path`, if it lists it.
fn saved_size(content: &str, path: &str) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_str(content).ok()?;
    if v.get("success") != Some(&serde_json::Value::Bool(true)) {
        return None;
    }
    v.pointer("/data/files")?
        .as_array()?
        .iter()
        .find(|f| f.get("path").and_then(serde_json::Value::as_str) == Some(path))?
        .get("bytes")?
        .as_i64()
}

/// The file `path` attached in the snapshot of link `id`, for `viewer`.
pub async fn fetch(
    conn: &mut AsyncPgConnection,
    store: &WorkspaceStore,
    gate: &ReadGate,
    id: &str,
    path: &str,
    viewer: &Viewer,
    now: DateTime<Utc>,
) -> Result<SharedFile, SharingError> {
    let (id, path, viewer) = (id.to_owned(), path.to_owned(), viewer.clone());
    conn.transaction(|conn| {
        async move {
            let opened = open(conn, &id, &viewer, now).await?;
            admit(gate, &opened.share)?;
            let sent = attached(conn, &opened.share, &path).await?;
            let bytes = read_owner_file(store, opened.share.owner_id, &path).await?;
            if !sent.matches(&bytes) {
                return Err(SharingError::FileChanged);
            }
            views::record(conn, &opened.share, &viewer, Action::File(&path), now).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_decides_and_without_one_the_size_does() {
        let digest = hex(&Sha256::digest(b"abc"));
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let with = |sha256: Option<String>| Sent {
            bytes: Some(3),
            sha256,
        };
        assert!(with(Some(digest.clone())).matches(b"abc"));
        assert!(with(Some(digest.to_ascii_uppercase())).matches(b"abc"));
        assert!(!with(Some(digest)).matches(b"abd"));
        assert!(with(None).matches(b"abd"));
        assert!(!with(None).matches(b"abcd"));
    }

    #[test]
    fn a_tool_result_names_the_size_of_the_files_it_saved_and_only_when_it_succeeded() {
        let ok = r#"{"success":true,"data":{"files":[{"path":"outputs/c/chart.png","mime":"image/png","bytes":42}]},"error":null}"#;
        assert_eq!(saved_size(ok, "outputs/c/chart.png"), Some(42));
        assert_eq!(saved_size(ok, "outputs/c/report.csv"), None);
        assert_eq!(
            saved_size(&ok.replace("true", "false"), "outputs/c/chart.png"),
            None
        );
        assert_eq!(
            saved_size("[hidden] outputs/c/chart.png", "outputs/c/chart.png"),
            None
        );
    }
}
