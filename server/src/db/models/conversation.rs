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
}

/// Keyset cursor: the `(updated_at, id)` of the last conversation of the previous page.
pub type PageCursor = (DateTime<Utc>, Uuid);

/// The owner's conversations, most recently active first.
pub async fn list_owned(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    limit: i64,
    before: Option<PageCursor>,
) -> QueryResult<Vec<Conversation>> {
    let mut query = dsl::conversations
        .filter(dsl::user_id.eq(user_id))
        .select(Conversation::as_select())
        .order((dsl::updated_at.desc(), dsl::id.desc()))
        .limit(limit)
        .into_boxed();
    if let Some((at, id)) = before {
        query = query.filter(
            dsl::updated_at
                .lt(at)
                .or(dsl::updated_at.eq(at).and(dsl::id.lt(id))),
        );
    }
    query.load(conn).await
}

pub async fn create(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    title: &str,
    model: Option<&str>,
) -> QueryResult<Conversation> {
    diesel::insert_into(dsl::conversations)
        .values((
            dsl::id.eq(Uuid::new_v4()),
            dsl::user_id.eq(user_id),
            dsl::title.eq(title),
            dsl::model.eq(model),
        ))
        .returning(Conversation::as_returning())
        .get_result(conn)
        .await
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

pub async fn rename_owned(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    user_id: Uuid,
    title: &str,
) -> QueryResult<Option<Conversation>> {
    diesel::update(
        dsl::conversations
            .filter(dsl::id.eq(id))
            .filter(dsl::user_id.eq(user_id)),
    )
    .set((dsl::title.eq(title), dsl::updated_at.eq(diesel::dsl::now)))
    .returning(Conversation::as_returning())
    .get_result(conn)
    .await
    .optional()
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
