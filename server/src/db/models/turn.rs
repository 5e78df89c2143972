//! The database side of an agent turn: one transaction before the model is called (claim the
//! conversation, read its history, store the user message) and one after the turn (store what
//! it produced, release the claim).

use std::time::Duration;

use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::conversation::Conversation;
use super::message::{self, Message, NewMessage};
use crate::db::schema::{conversations::dsl as conv, roles::dsl as roles};

/// What starting a turn found.
#[derive(Debug)]
pub enum Begin {
    Started {
        conversation: Conversation,
        /// Messages before this turn's user message.
        history: Vec<Message>,
        /// Tools the user's role allows right now.
        allowed_tools: Vec<String>,
    },
    /// Not the caller's conversation, or no such conversation.
    NotFound,
    /// Another turn is running in this conversation.
    Busy,
}

/// Claims the conversation for `turn_id` and stores the user message, in one commit.
pub async fn begin(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    role: &str,
    turn_id: Uuid,
    user_message: NewMessage,
    stale_after: Duration,
) -> QueryResult<Begin> {
    let role = role.to_owned();
    let stale = chrono::Utc::now()
        - chrono::Duration::from_std(stale_after).unwrap_or(chrono::Duration::minutes(10));
    conn.transaction(|conn| {
        async move {
            let claimed: Option<Conversation> = diesel::update(
                conv::conversations
                    .filter(conv::id.eq(user_message.conversation_id))
                    .filter(conv::user_id.eq(user_id))
                    .filter(
                        conv::active_turn_id
                            .is_null()
                            .or(conv::active_turn_at.lt(stale)),
                    ),
            )
            .set((
                conv::active_turn_id.eq(turn_id),
                conv::active_turn_at.eq(diesel::dsl::now),
                conv::updated_at.eq(diesel::dsl::now),
            ))
            .returning(Conversation::as_returning())
            .get_result(conn)
            .await
            .optional()?;
            let Some(conversation) = claimed else {
                let owned =
                    super::conversation::find_owned(conn, user_message.conversation_id, user_id)
                        .await?
                        .is_some();
                return Ok(if owned { Begin::Busy } else { Begin::NotFound });
            };
            let history = message::list(conn, conversation.id).await?;
            message::insert_many(conn, std::slice::from_ref(&user_message)).await?;
            let allowed_tools: Vec<String> = roles::roles
                .find(&role)
                .select(roles::tools)
                .first(conn)
                .await
                .optional()?
                .unwrap_or_default();
            Ok(Begin::Started {
                conversation,
                history,
                allowed_tools,
            })
        }
        .scope_boxed()
    })
    .await
}

/// Stores what the turn produced and releases the claim, in one commit.
pub async fn finish(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    rows: Vec<NewMessage>,
) -> QueryResult<()> {
    conn.transaction(|conn| {
        async move {
            message::insert_many(conn, &rows).await?;
            diesel::update(
                conv::conversations
                    .filter(conv::id.eq(conversation_id))
                    .filter(conv::active_turn_id.eq(turn_id)),
            )
            .set((
                conv::active_turn_id.eq(None::<Uuid>),
                conv::active_turn_at.eq(None::<chrono::DateTime<chrono::Utc>>),
                conv::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)
            .await?;
            Ok(())
        }
        .scope_boxed()
    })
    .await
}

/// Whether a turn is running in the conversation (on any replica).
pub async fn is_active(conn: &mut AsyncPgConnection, conversation_id: Uuid) -> QueryResult<bool> {
    conv::conversations
        .find(conversation_id)
        .select(conv::active_turn_id.is_not_null())
        .first(conn)
        .await
}
