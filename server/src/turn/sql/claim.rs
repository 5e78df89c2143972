//! The conversation side of a turn's start: claiming an existing conversation for the turn,
//! or (a `/v1` call) creating it claimed, and the row the start's reads then stand for.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::conversation::Conversation;
use crate::db::models::message;
use crate::db::prepared::sql;
use crate::turn::sql::NewConversation;

/// The claim, as a CTE `cl` of the start's inputs statement ([`super::inputs`]): marks the
/// conversation `$1` of the user `$2` as running turn `$12` (process `$14`) unless another
/// live turn holds it (one started before `$13` is stale) or it waits for approvals. A
/// conversation still titled by default (`$15`) is titled `$16` (from its first message)
/// until a generated title replaces it. Its `updated_at` becomes the turn's start (the
/// list's order); the release leaves it. Claims nothing unless `$11`. A macro, so that the
/// statement it goes into stays one fixed text.
macro_rules! claim_cte {
    () => {
        "cl AS (UPDATE conversations \
                   SET active_turn_id = $12, active_turn_at = now(), updated_at = now(), \
                       active_process_id = $14, archived_at = NULL, \
                       title = CASE WHEN title_auto AND title = $15 THEN $16 ELSE title END \
                 WHERE $11 AND id = $1 AND user_id = $2 \
                   AND (active_turn_id IS NULL OR active_turn_at < $13) \
                   AND NOT EXISTS (SELECT 1 FROM approvals a \
                                    WHERE a.conversation_id = $1 AND a.resumed_at IS NULL) \
                RETURNING id, user_id, title, model, created_at, updated_at, pinned, \
                          archived_at, system_prompt, title_auto, assistant_id, \
                          memory_enabled, forked_from)"
    };
}
pub(super) use claim_cte;

/// The claimed row's columns in the inputs statement's result ([`Claimed`]).
macro_rules! claimed_columns {
    () => {
        "cl.id AS claimed_id, cl.user_id AS claimed_user_id, cl.title AS claimed_title, \
         cl.model AS claimed_model, cl.created_at AS claimed_created_at, \
         cl.updated_at AS claimed_updated_at, cl.pinned AS claimed_pinned, \
         cl.archived_at AS claimed_archived_at, cl.system_prompt AS claimed_system_prompt, \
         cl.title_auto AS claimed_title_auto, cl.assistant_id AS claimed_assistant_id, \
         cl.memory_enabled AS claimed_memory_enabled, cl.forked_from AS claimed_forked_from"
    };
}
pub(super) use claimed_columns;

/// What the start asks to claim ([`claim_cte`]).
pub(super) struct ClaimAsk {
    pub(super) turn_id: Uuid,
    /// A turn started before this is stale: its claim is taken over.
    pub(super) stale: DateTime<Utc>,
    pub(super) process_id: Uuid,
    pub(super) provisional_title: String,
}

/// The claimed conversation as the inputs statement returns it: every column NULL when
/// nothing was claimed (the conversation is held, or is not the user's).
#[derive(QueryableByName)]
pub(super) struct Claimed {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    claimed_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    claimed_user_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    claimed_title: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    claimed_model: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    claimed_created_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    claimed_updated_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Bool>)]
    claimed_pinned: Option<bool>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    claimed_archived_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    claimed_system_prompt: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    claimed_title_auto: Option<bool>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    claimed_assistant_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Bool>)]
    claimed_memory_enabled: Option<bool>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    claimed_forked_from: Option<Uuid>,
}

impl Claimed {
    /// The claimed conversation; `None` when nothing was claimed.
    pub(super) fn conversation(self) -> Option<Conversation> {
        Some(Conversation {
            id: self.claimed_id?,
            user_id: self.claimed_user_id?,
            title: self.claimed_title?,
            model: self.claimed_model,
            created_at: self.claimed_created_at?,
            updated_at: self.claimed_updated_at?,
            pinned: self.claimed_pinned?,
            archived_at: self.claimed_archived_at,
            system_prompt: self.claimed_system_prompt,
            title_auto: self.claimed_title_auto?,
            assistant_id: self.claimed_assistant_id,
            memory_enabled: self.claimed_memory_enabled?,
            forked_from: self.claimed_forked_from,
        })
    }
}

/// The workspace paths of a message's `attachments` column (`[{"path", "bytes"}]`).
pub(super) fn attached_paths(attachments: Option<&serde_json::Value>) -> Vec<&str> {
    attachments
        .and_then(serde_json::Value::as_array)
        .map(|files| files.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default()
}

/// Inserts `new` as the user's conversation, claimed by `turn_id` as [`claim_cte`] would, then its earlier messages. Sent with the start's COMMIT (nothing in the first
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
