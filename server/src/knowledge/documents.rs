//! A collection's files: adding one (uploaded, or from the workspace) queues its ingestion
//! job; the same name again replaces it, the old version staying searchable until the new
//! one is ready. Retrying a failed file, removing one, and reading a cited passage.

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    BigInt, Bytea, Float4, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::collections::{self, Caller};
use super::extract::FileKind;
use super::KnowledgeError;

/// A file as the API shows it (never its bytes).
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct FileView {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = BigInt)]
    pub bytes: i64,
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = Float4)]
    pub progress: f32,
    #[diesel(sql_type = Nullable<Text>)]
    pub error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub error_code: Option<String>,
    #[diesel(sql_type = Integer)]
    pub chunks: i32,
    #[diesel(sql_type = Nullable<Text>)]
    pub embedding_model: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

const SELECT_FILE: &str = "SELECT id, name, source, bytes, state, progress, error, error_code, \
        chunk_count AS chunks, embedding_model, updated_at FROM documents";

/// The collection's files, by name.
pub async fn list(
    conn: &mut AsyncPgConnection,
    collection: Uuid,
) -> Result<Vec<FileView>, KnowledgeError> {
    Ok(diesel::sql_query(format!(
        "{SELECT_FILE} WHERE collection_id = $1 ORDER BY lower(name) LIMIT 5000"
    ))
    .bind::<SqlUuid, _>(collection)
    .load(conn)
    .await?)
}

async fn one(
    conn: &mut AsyncPgConnection,
    collection: Uuid,
    id: Uuid,
) -> Result<FileView, KnowledgeError> {
    diesel::sql_query(format!(
        "{SELECT_FILE} WHERE collection_id = $1 AND id = $2"
    ))
    .bind::<SqlUuid, _>(collection)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await
    .optional()?
    .ok_or(KnowledgeError::FileNotFound)
}

/// A file to add.
pub struct NewFile<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
    /// `Some(path)` when it came from the workspace.
    pub workspace_path: Option<&'a str>,
}

/// Limits a new file is checked against before anything is stored.
pub struct FileLimits {
    pub max_file_bytes: usize,
    pub max_files: i64,
    /// Bytes of files the caller may have uploaded in all; 0: no limit.
    pub user_quota_bytes: i64,
}

/// The file's name as stored: its last path part, checked.
pub fn file_name(name: &str) -> Result<String, KnowledgeError> {
    let base = name.rsplit('/').next().unwrap_or(name).trim();
    if base.is_empty()
        || base.len() > 255
        || base.starts_with('.')
        || base.chars().any(|c| c.is_control() || c == '\\')
    {
        return Err(KnowledgeError::Invalid(
            "a file needs a name of 1-255 bytes, not starting with a dot".into(),
        ));
    }
    Ok(base.to_owned())
}

#[derive(QueryableByName)]
struct Added {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// Adds (or replaces) a file of a collection the caller manages, queued for ingestion with
/// `model`. The type and size are checked first: a refused file stores nothing.
pub async fn add(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    collection: Uuid,
    file: NewFile<'_>,
    limits: &FileLimits,
    model: &str,
) -> Result<FileView, KnowledgeError> {
    collections::managed(conn, caller, collection).await?;
    let name = file_name(file.name)?;
    FileKind::of(&name).map_err(|e| KnowledgeError::Unsupported(e.to_string()))?;
    if file.bytes.len() > limits.max_file_bytes {
        return Err(KnowledgeError::FileTooLarge {
            bytes: file.bytes.len(),
            max: limits.max_file_bytes,
        });
    }
    if file.bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(KnowledgeError::EmptyFile);
    }
    let count: Option<Count> = diesel::sql_query(
        "SELECT count(*) AS n FROM documents WHERE collection_id = $1 \
         HAVING count(*) >= $2 AND NOT bool_or(lower(name) = lower($3))",
    )
    .bind::<SqlUuid, _>(collection)
    .bind::<BigInt, _>(limits.max_files)
    .bind::<Text, _>(&name)
    .get_result(conn)
    .await
    .optional()?;
    if let Some(c) = count {
        return Err(KnowledgeError::Limit(format!(
            "the collection already holds {} files, the most it may",
            c.n
        )));
    }
    let sha = hex(&Sha256::digest(file.bytes));
    let source = if file.workspace_path.is_some() {
        "workspace"
    } else {
        "upload"
    };
    let bytes = i64::try_from(file.bytes.len()).unwrap_or(i64::MAX);
    let (me, quota) = (caller.id, limits.user_quota_bytes);
    let (workspace_path, content, model) = (file.workspace_path, file.bytes, model);
    let name = &name;
    let sha = &sha;
    // Under a lock on the uploader: two adds at once cannot both fit in the last of a quota.
    let added = conn
        .transaction::<Added, KnowledgeError, _>(|conn| {
            async move {
                if quota > 0 {
                    let used =
                        super::quota::lock_and_use(conn, me, Some((collection, name))).await?;
                    if used.saturating_add(bytes) > quota {
                        return Err(KnowledgeError::Quota {
                            used,
                            bytes,
                            limit: quota,
                        });
                    }
                }
                // A new file, or a new version of one: the generation moves on, the live one
                // stays.
                Ok(diesel::sql_query(
                    "INSERT INTO documents (id, collection_id, name, source, workspace_path, \
                                            uploaded_by, content, content_sha256, bytes, state, \
                                            target_model) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued', $10) \
                     ON CONFLICT (collection_id, name) DO UPDATE SET \
                       source = EXCLUDED.source, workspace_path = EXCLUDED.workspace_path, \
                       uploaded_by = EXCLUDED.uploaded_by, content = EXCLUDED.content, \
                       content_sha256 = EXCLUDED.content_sha256, bytes = EXCLUDED.bytes, \
                       text = NULL, state = 'queued', progress = 0, error = NULL, \
                       error_code = NULL, generation = documents.generation + 1, \
                       target_model = EXCLUDED.target_model, lease_owner = NULL, \
                       lease_until = NULL, attempts = 0, updated_at = now() \
                     RETURNING id",
                )
                .bind::<SqlUuid, _>(Uuid::new_v4())
                .bind::<SqlUuid, _>(collection)
                .bind::<Text, _>(name)
                .bind::<Text, _>(source)
                .bind::<Nullable<Text>, _>(workspace_path)
                .bind::<SqlUuid, _>(me)
                .bind::<Bytea, _>(content)
                .bind::<Text, _>(sha)
                .bind::<BigInt, _>(bytes)
                .bind::<Text, _>(model)
                .get_result(conn)
                .await?)
            }
            .scope_boxed()
        })
        .await?;
    one(conn, collection, added.id).await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes a file (and its chunks) from a collection the caller manages.
pub async fn remove(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    collection: Uuid,
    id: Uuid,
) -> Result<(), KnowledgeError> {
    collections::managed(conn, caller, collection).await?;
    let n = diesel::sql_query("DELETE FROM documents WHERE collection_id = $1 AND id = $2")
        .bind::<SqlUuid, _>(collection)
        .bind::<SqlUuid, _>(id)
        .execute(conn)
        .await?;
    if n == 0 {
        return Err(KnowledgeError::FileNotFound);
    }
    Ok(())
}

/// Queues a failed file again; its job resumes from the chunks already embedded.
pub async fn retry(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    collection: Uuid,
    id: Uuid,
) -> Result<FileView, KnowledgeError> {
    collections::managed(conn, caller, collection).await?;
    let file = one(conn, collection, id).await?;
    if file.state != "failed" {
        return Err(KnowledgeError::Invalid(format!(
            "only a failed file can be retried; this one is {}",
            file.state
        )));
    }
    diesel::sql_query(
        "UPDATE documents SET state = 'queued', error = NULL, error_code = NULL, attempts = 0, \
                lease_owner = NULL, lease_until = NULL, uploaded_by = $3, updated_at = now() \
          WHERE collection_id = $1 AND id = $2 AND state = 'failed'",
    )
    .bind::<SqlUuid, _>(collection)
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(caller.id)
    .execute(conn)
    .await?;
    one(conn, collection, id).await
}

/// Re-indexes every file whose live chunks were embedded with another model than `model`
/// (the configured embedding model changed): each becomes a job again. Returns how many.
pub async fn requeue_for_model(
    conn: &mut AsyncPgConnection,
    model: &str,
) -> Result<usize, KnowledgeError> {
    Ok(diesel::sql_query(
        "UPDATE documents SET state = 'queued', progress = 0, error = NULL, error_code = NULL, \
                generation = generation + 1, target_model = $1, attempts = 0, \
                lease_owner = NULL, lease_until = NULL, updated_at = now() \
          WHERE target_model <> $1",
    )
    .bind::<Text, _>(model)
    .execute(conn)
    .await?)
}

/// A cited passage with some text around it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Passage {
    #[schema(value_type = Object)]
    pub file: serde_json::Value,
    pub collection_id: Uuid,
    pub byte_start: usize,
    pub byte_end: usize,
    pub before: String,
    pub text: String,
    pub after: String,
}

#[derive(QueryableByName)]
struct TextRow {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Nullable<Text>)]
    text: Option<String>,
}

/// Bytes of context shown on each side of a passage.
const CONTEXT_BYTES: usize = 400;
/// Longest passage served.
const MAX_PASSAGE_BYTES: usize = 64 * 1024;

/// `[start, end)` of the file's extracted text, in a collection the caller may read.
pub async fn passage(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    collection: Uuid,
    id: Uuid,
    start: usize,
    end: usize,
) -> Result<Passage, KnowledgeError> {
    collections::get(conn, caller, collection).await?;
    let row: TextRow =
        diesel::sql_query("SELECT name, text FROM documents WHERE collection_id = $1 AND id = $2")
            .bind::<SqlUuid, _>(collection)
            .bind::<SqlUuid, _>(id)
            .get_result(conn)
            .await
            .optional()?
            .ok_or(KnowledgeError::FileNotFound)?;
    let text = row.text.unwrap_or_default();
    if start >= end || end > text.len() || end - start > MAX_PASSAGE_BYTES {
        return Err(KnowledgeError::Invalid(format!(
            "the passage must be a range of at most {MAX_PASSAGE_BYTES} bytes inside the \
             file's {} bytes of text",
            text.len()
        )));
    }
    let start = floor_char(&text, start);
    let end = floor_char(&text, end);
    let from = floor_char(&text, start.saturating_sub(CONTEXT_BYTES));
    let to = floor_char(&text, (end + CONTEXT_BYTES).min(text.len()));
    Ok(Passage {
        file: serde_json::json!({"id": id, "name": row.name}),
        collection_id: collection,
        byte_start: start,
        byte_end: end,
        before: text[from..start].to_owned(),
        text: text[start..end].to_owned(),
        after: text[end..to].to_owned(),
    })
}

/// The largest char boundary at or before `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
