//! The conversation side of a turn's start: claiming an existing conversation for the turn,
//! or (a `/v1` call) creating it claimed, and the row the start's reads then stand for.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryResult};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::conversation::Conversation;
use crate::db::models::message;
use crate::db::prepared::sql;
use crate::turn::sql::NewConversation;

/// Marks the conversation as running `turn_id` unless another live turn holds it: `None`
/// when it is held, or is not the user's. A conversation still titled by default is titled
/// `provisional_title` (from its first message) until a generated title replaces it. Its
/// `updated_at` becomes the turn's start (the list's order); the release leaves it.
pub(super) fn claim_conversation(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    user_id: Uuid,
    turn_id: Uuid,
    stale: DateTime<Utc>,
    process_id: Uuid,
    provisional_title: String,
) -> BoxFuture<'static, QueryResult<Option<Conversation>>> {
    sql("UPDATE conversations \
            SET active_turn_id = $3, active_turn_at = now(), updated_at = now(), \
                active_process_id = $5, archived_at = NULL, \
                title = CASE WHEN title_auto AND title = $6 THEN $7 ELSE title END \
          WHERE id = $1 AND user_id = $2 \
            AND (active_turn_id IS NULL OR active_turn_at < $4) \
            AND NOT EXISTS (SELECT 1 FROM approvals a \
                             WHERE a.conversation_id = $1 AND a.resumed_at IS NULL) \
         RETURNING id, user_id, title, model, created_at, updated_at, pinned, archived_at, \
                   system_prompt, title_auto, assistant_id, memory_enabled, forked_from")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(user_id)
    .bind::<SqlUuid, _>(turn_id)
    .bind::<Timestamptz, _>(stale)
    .bind::<SqlUuid, _>(process_id)
    .bind::<Text, _>(crate::db::models::conversation::DEFAULT_TITLE)
    .bind::<Text, _>(provisional_title)
    .get_result(conn)
    .map(|r| r.optional())
    .boxed()
}

/// The workspace paths of a message's `attachments` column (`[{"path", "bytes"}]`).
pub(super) fn attached_paths(attachments: Option<&serde_json::Value>) -> Vec<&str> {
    attachments
        .and_then(serde_json::Value::as_array)
        .map(|files| files.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default()
}

/// Inserts `new` as the user's conversation, claimed by `turn_id` as [`claim_conversation`]
/// would, then its earlier messages. Sent with the start's COMMIT (nothing in the first
/// round trip reads the new row), so the model call does not wait for these inserts.
pub(super) fn create_claimed(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    user_id: Uuid,
    new: &NewConversation,
    turn_id: Uuid,
    process_id: Uuid,
) -> BoxFuture<'static, QueryResult<()>> {
    // Named by the API call: no generated title replaces it.
    let row = sql("INSERT INTO conversations \
                (id, user_id, title, model, active_turn_id, active_turn_at, active_process_id, \
                 title_auto, key_scopes, assistant_id) \
         VALUES ($1, $2, $3, $4, $5, now(), $6, false, $7, $8)")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(new.title.clone())
    .bind::<Nullable<Text>, _>(new.model.clone())
    .bind::<SqlUuid, _>(turn_id)
    .bind::<SqlUuid, _>(process_id)
    .bind::<Nullable<diesel::sql_types::Array<Text>>, _>(new.key_scopes.map(|k| k.names()))
    .bind::<Nullable<SqlUuid>, _>(new.assistant_id)
    .execute(conn);
    // Constructed after the row's insert, so sent after it: the messages need their
    // conversation.
    let history = message::insert_many(conn, &new.history);
    futures_util::future::try_join(row, history)
        .map(|r| r.map(drop))
        .boxed()
}

/// The conversation [`create_claimed`] stores, as the start's reads would have returned it.
pub(super) fn created(
    conversation_id: Uuid,
    user_id: Uuid,
    new: &NewConversation,
    now: DateTime<Utc>,
) -> Conversation {
    Conversation {
        id: conversation_id,
        user_id,
        title: new.title.clone(),
        model: new.model.clone(),
        created_at: now,
        updated_at: now,
        pinned: false,
        archived_at: None,
        system_prompt: None,
        title_auto: false,
        assistant_id: new.assistant_id,
        memory_enabled: true,
        forked_from: None,
    }
}
