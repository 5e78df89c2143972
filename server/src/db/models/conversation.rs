//! Conversations. Every query that takes a conversation id also takes the owner's id, so
//! another user's conversation is indistinguishable from a missing one.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use crate::db::schema::conversations::{self, dsl};

#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = conversations)]
pub struct Conversation {
    pub id: Uuid,
    #[serde(skip)]
    pub user_id: Uuid,
    pub title: String,
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Kept at the top of the list.
    pub pinned: bool,
    /// Put away: out of the list (still searchable); sending a message brings it back.
    pub archived_at: Option<DateTime<Utc>>,
    /// The conversation's own instructions, sent after the server's system prompt.
    pub system_prompt: Option<String>,
    /// The title is still the default: a generated one may replace it (never one the user
    /// chose).
    pub title_auto: bool,
    /// The assistant the conversation was started with (its current version applies).
    pub assistant_id: Option<Uuid>,
    /// Whether the user's memory notes go into this conversation's prompts.
    pub memory_enabled: bool,
    /// The caller's own conversation this one was continued from as a copy (null for any
    /// other, and once that one is deleted).
    pub forked_from: Option<Uuid>,
}

pub use crate::domain::DEFAULT_TITLE;

/// Keyset cursor: the `(pinned, updated_at, id)` of the last conversation of the previous
/// page.
pub type PageCursor = (bool, DateTime<Utc>, Uuid);

/// Which conversations a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    /// The ones in use (not archived).
    Active,
    /// The archived ones.
    Archived,
}

/// The owner's conversations on `shelf`: pinned first, then most recently active.
pub async fn list_owned(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    shelf: Shelf,
    limit: i64,
    before: Option<PageCursor>,
) -> QueryResult<Vec<Conversation>> {
    let mut query = dsl::conversations
        .filter(dsl::user_id.eq(user_id))
        .select(Conversation::as_select())
        .order((dsl::pinned.desc(), dsl::updated_at.desc(), dsl::id.desc()))
        .limit(limit)
        .into_boxed();
    query = match shelf {
        Shelf::Active => query.filter(dsl::archived_at.is_null()),
        Shelf::Archived => query.filter(dsl::archived_at.is_not_null()),
    };
    if let Some((pinned, at, id)) = before {
        // After (pinned, at, id) in the descending order.
        query = query.filter(
            dsl::pinned.lt(pinned).or(dsl::pinned.eq(pinned).and(
                dsl::updated_at
                    .lt(at)
                    .or(dsl::updated_at.eq(at).and(dsl::id.lt(id))),
            )),
        );
    }
    query.load(conn).await
}

/// What a `PATCH` changes; `None` leaves a field as it is.
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = conversations)]
pub struct Changes {
    pub title: Option<String>,
    pub pinned: Option<bool>,
    pub archived_at: Option<Option<DateTime<Utc>>>,
    pub model: Option<String>,
    /// `Some(None)` removes the conversation's instructions.
    pub system_prompt: Option<Option<String>>,
    /// Set to false with a title the user chose.
    pub title_auto: Option<bool>,
    /// Whether the user's memory notes go into this conversation's prompts.
    pub memory_enabled: Option<bool>,
    /// The assistant a new conversation starts with.
    pub assistant_id: Option<Option<Uuid>>,
}

/// Starts a conversation; `title: None` gives it the default title, which a generated one
/// replaces after the first answer.
pub async fn create(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    title: Option<&str>,
    model: Option<&str>,
) -> QueryResult<Conversation> {
    diesel::insert_into(dsl::conversations)
        .values((
            dsl::id.eq(Uuid::new_v4()),
            dsl::user_id.eq(user_id),
            dsl::title.eq(title.unwrap_or(DEFAULT_TITLE)),
            dsl::title_auto.eq(title.is_none()),
            dsl::model.eq(model),
        ))
        .returning(Conversation::as_returning())
        .get_result(conn)
        .await
}

/// Any user's conversation, for the admin's read-only view (the caller checks it is an admin).
pub async fn find_any(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Conversation>> {
    dsl::conversations
        .find(id)
        .select(Conversation::as_select())
        .first(conn)
        .await
        .optional()
}

/// The turn running in the conversation (on any replica), if any.
pub async fn active_turn(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
) -> QueryResult<Option<Uuid>> {
    dsl::conversations
        .find(conversation_id)
        .select(dsl::active_turn_id)
        .first::<Option<Uuid>>(conn)
        .await
        .optional()
        .map(Option::flatten)
}

pub async fn find_owned(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    user_id: Uuid,
) -> QueryResult<Option<Conversation>> {
    dsl::conversations
        .filter(dsl::id.eq(id))
        .filter(dsl::user_id.eq(user_id))
        .select(Conversation::as_select())
        .first(conn)
        .await
        .optional()
}

/// Renames, pins or archives the owner's conversation. Pinning and archiving do not count as
/// activity (the order by `updated_at` stays); a new title does.
pub async fn update_owned(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    user_id: Uuid,
    changes: &Changes,
) -> QueryResult<Option<Conversation>> {
    let target = dsl::conversations
        .filter(dsl::id.eq(id))
        .filter(dsl::user_id.eq(user_id));
    if changes.title.is_some() {
        diesel::update(target)
            .set((changes, dsl::updated_at.eq(diesel::dsl::now)))
            .returning(Conversation::as_returning())
            .get_result(conn)
            .await
            .optional()
    } else {
        diesel::update(target)
            .set(changes)
            .returning(Conversation::as_returning())
            .get_result(conn)
            .await
            .optional()
    }
}

/// A conversation that matched a search, with the latest matching message (if the match
/// was in the messages rather than the title).
#[derive(Debug, QueryableByName, Serialize, utoipa::ToSchema)]
pub struct Found {
    #[diesel(embed)]
    #[serde(flatten)]
    pub conversation: Conversation,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub snippet: Option<String>,
}

/// The owner's conversations, archived ones included, whose title contains `text` or
/// whose messages (what the user and the assistant wrote) match it as full-text search
/// (`websearch_to_tsquery` syntax: words, "a phrase", -not). Pinned first, then most recent.
///
/// The cost is bounded by the owner's own messages: the plan walks the owner's
/// conversations and, per conversation, its messages newest first (stopping at the first
/// match, which is the snippet), matching the tsvector stored with each message. No index
/// over all users' messages exists that a plan could start from, so other users' data
/// neither slows a search nor shows in its timing.
pub async fn search_owned(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    text: &str,
    limit: i64,
) -> QueryResult<Vec<Found>> {
    use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
    let like = format!(
        "%{}%",
        text.replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    // Raw SQL: full-text search (`websearch_to_tsquery`, `@@`) in a LATERAL join.
    diesel::sql_query(
        "SELECT c.id, c.user_id, c.title, c.model, c.created_at, c.updated_at, c.pinned, \
                c.archived_at, c.system_prompt, c.title_auto, c.assistant_id, \
                c.memory_enabled, c.forked_from, s.snippet \
           FROM conversations c \
          CROSS JOIN websearch_to_tsquery('simple', $2) q \
           LEFT JOIN LATERAL (SELECT left(m.content, 400) AS snippet FROM messages m \
                               WHERE m.conversation_id = c.id AND m.search_vector @@ q \
                               ORDER BY m.seq DESC LIMIT 1) s ON true \
          WHERE c.user_id = $1 AND (c.title ILIKE $3 OR s.snippet IS NOT NULL) \
          ORDER BY c.pinned DESC, c.updated_at DESC, c.id DESC \
          LIMIT $4",
    )
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(text)
    .bind::<Text, _>(like)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Records that `id` was continued as a copy of `original` (both the same owner's); returns
/// what was stored.
pub async fn set_forked_from(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    original: Uuid,
) -> QueryResult<Option<Uuid>> {
    diesel::update(dsl::conversations.filter(dsl::id.eq(id)))
        .set(dsl::forked_from.eq(Some(original)))
        .returning(dsl::forked_from)
        .get_result(conn)
        .await
}

/// Replaces the default title with a generated one, unless the user named the conversation
/// meanwhile; false when the title was not the default any more.
pub async fn set_generated_title(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    title: &str,
) -> QueryResult<bool> {
    let n = diesel::update(
        dsl::conversations
            .filter(dsl::id.eq(id))
            .filter(dsl::title_auto),
    )
    .set((dsl::title.eq(title), dsl::title_auto.eq(false)))
    .execute(conn)
    .await?;
    Ok(n > 0)
}

/// The scopes of the API key whose `/v1` call created the conversation (`None`: created
/// with an access token, or gone): its later turns keep to them.
pub async fn key_scopes(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> QueryResult<Option<crate::domain::KeyScopes>> {
    let stored: Option<Option<Vec<String>>> = dsl::conversations
        .filter(dsl::id.eq(id))
        .select(dsl::key_scopes)
        .first(conn)
        .await
        .optional()?;
    Ok(stored
        .flatten()
        .map(|s| crate::domain::KeyScopes::stored(&s)))
}

/// Deletes the conversation and its messages; false when it is not the owner's.
pub async fn delete_owned(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    user_id: Uuid,
) -> QueryResult<bool> {
    let n = diesel::delete(
        dsl::conversations
            .filter(dsl::id.eq(id))
            .filter(dsl::user_id.eq(user_id)),
    )
    .execute(conn)
    .await?;
    Ok(n > 0)
}
