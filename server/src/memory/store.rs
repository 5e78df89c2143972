//! Memory notes in Postgres. A note is added under a lock of its owner's row, so two
//! additions at once cannot both pass the limits.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bool, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use crate::config::MemorySettings;

/// One note.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct Note {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub text: String,
    /// `user` (account page) or `model` (the `remember` tool).
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

/// Why a note was not stored.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Full(String),
    #[error("memory is turned off for this account")]
    Off,
    #[error("memory is turned off in this chat")]
    OffInChat,
    #[error("no such note")]
    NotFound,
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

#[derive(QueryableByName)]
struct Flag {
    #[diesel(sql_type = Bool)]
    on: bool,
}

const COLUMNS: &str = "id, text, source, created_at, updated_at";

/// The user's notes, oldest first (the order the prompt lists them in).
pub async fn list(conn: &mut AsyncPgConnection, user: Uuid) -> diesel::QueryResult<Vec<Note>> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM memory_notes WHERE user_id = $1 ORDER BY created_at, id LIMIT 1000"
    ))
    .bind::<SqlUuid, _>(user)
    .load(conn)
    .await
}

/// Whether the user has memory on.
pub async fn enabled(conn: &mut AsyncPgConnection, user: Uuid) -> diesel::QueryResult<bool> {
    let f: Option<Flag> = diesel::sql_query("SELECT memory_enabled AS on FROM users WHERE id = $1")
        .bind::<SqlUuid, _>(user)
        .get_result(conn)
        .await
        .optional()?;
    Ok(f.is_some_and(|f| f.on))
}

/// Turns the user's memory on or off (the notes stay).
pub async fn set_enabled(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    on: bool,
) -> diesel::QueryResult<()> {
    diesel::sql_query("UPDATE users SET memory_enabled = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(user)
        .bind::<Bool, _>(on)
        .execute(conn)
        .await
        .map(drop)
}

/// Who writes a note.
#[derive(Debug, Clone, Copy)]
pub enum Writer {
    /// The user, in the account page (allowed with memory off: they manage their notes).
    User,
    /// The model through `remember`, in `chat`: only while memory is on for the user and
    /// for that chat.
    Model { chat: Uuid },
}

impl Writer {
    fn source(self) -> &'static str {
        match self {
            Writer::User => "user",
            Writer::Model { .. } => "model",
        }
    }
}

/// Adds a note within `limits` (the model's only while memory is on for the user and the chat).
pub async fn add(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    text: &str,
    writer: Writer,
    limits: &MemorySettings,
) -> Result<Note, MemoryError> {
    let text = crate::domain::pg_safe_text(text.trim()).into_owned();
    conn.transaction::<_, MemoryError, _>(|conn| {
        async move {
            let on: Option<Flag> = diesel::sql_query(
                "SELECT memory_enabled AS on FROM users WHERE id = $1 FOR UPDATE",
            )
            .bind::<SqlUuid, _>(user)
            .get_result(conn)
            .await
            .optional()?;
            match (on, writer) {
                (None, _) => return Err(MemoryError::NotFound),
                (Some(f), Writer::Model { .. }) if !f.on => return Err(MemoryError::Off),
                (Some(_), Writer::Model { chat }) => {
                    if !chat_memory_on(conn, user, chat).await? {
                        return Err(MemoryError::OffInChat);
                    }
                }
                (Some(_), Writer::User) => {}
            }
            let existing: Vec<String> = list(conn, user)
                .await?
                .into_iter()
                .map(|n| n.text)
                .collect();
            if let Some(refusal) = super::refuse(limits, &existing, &text) {
                return Err(refusal);
            }
            Ok(diesel::sql_query(format!(
                "INSERT INTO memory_notes (id, user_id, text, source) VALUES ($1, $2, $3, $4) \
                 RETURNING {COLUMNS}"
            ))
            .bind::<SqlUuid, _>(Uuid::new_v4())
            .bind::<SqlUuid, _>(user)
            .bind::<Text, _>(&text)
            .bind::<Text, _>(writer.source())
            .get_result(conn)
            .await?)
        }
        .scope_boxed()
    })
    .await
}

/// Whether memory is on in the user's conversation `chat` (a chat that is not theirs: off).
async fn chat_memory_on(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    chat: Uuid,
) -> diesel::QueryResult<bool> {
    let f: Option<Flag> = diesel::sql_query(
        "SELECT memory_enabled AS on FROM conversations WHERE id = $1 AND user_id = $2",
    )
    .bind::<SqlUuid, _>(chat)
    .bind::<SqlUuid, _>(user)
    .get_result(conn)
    .await
    .optional()?;
    Ok(f.is_some_and(|f| f.on))
}

/// Rewrites one of the user's notes within `limits`.
pub async fn update(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    id: Uuid,
    text: &str,
    limits: &MemorySettings,
) -> Result<Note, MemoryError> {
    let text = crate::domain::pg_safe_text(text.trim()).into_owned();
    conn.transaction::<_, MemoryError, _>(|conn| {
        async move {
            diesel::sql_query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE")
                .bind::<SqlUuid, _>(user)
                .execute(conn)
                .await?;
            let notes = list(conn, user).await?;
            if !notes.iter().any(|n| n.id == id) {
                return Err(MemoryError::NotFound);
            }
            let others: Vec<String> = notes
                .into_iter()
                .filter(|n| n.id != id)
                .map(|n| n.text)
                .collect();
            if let Some(refusal) = super::refuse(limits, &others, &text) {
                return Err(refusal);
            }
            Ok(diesel::sql_query(format!(
                "UPDATE memory_notes SET text = $3, updated_at = now() \
                  WHERE id = $1 AND user_id = $2 RETURNING {COLUMNS}"
            ))
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(user)
            .bind::<Text, _>(&text)
            .get_result(conn)
            .await?)
        }
        .scope_boxed()
    })
    .await
}

/// Deletes one of the user's notes; `false` when there was none.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    id: Uuid,
) -> diesel::QueryResult<bool> {
    let n = diesel::sql_query("DELETE FROM memory_notes WHERE id = $1 AND user_id = $2")
        .bind::<SqlUuid, _>(id)
        .bind::<SqlUuid, _>(user)
        .execute(conn)
        .await?;
    Ok(n > 0)
}
