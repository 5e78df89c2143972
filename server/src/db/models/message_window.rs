//! Reading a conversation a part at a time: the browser's window of latest messages (and
//! earlier ones on demand) and the export's chunks. Nothing here loads a whole conversation,
//! whatever its length (a turn's history and the size bound it checks come from
//! `message::list_recent`).

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::message::Message;
use crate::db::schema::messages::dsl;
use crate::domain::MessageRole;

/// Some of a conversation's messages, oldest first.
#[derive(Debug)]
pub struct Window {
    pub messages: Vec<Message>,
    /// Whether older messages exist (then `messages[0].seq` is the cursor to ask from).
    pub more_before: bool,
}

/// The latest `limit` messages written before `before` (a message's `seq`; none: the
/// newest), oldest first. A window never starts inside a tool step: when its oldest rows
/// are tool results, it reaches back to the assistant message that asked for them.
pub async fn window(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    before: Option<i64>,
    limit: i64,
) -> QueryResult<Window> {
    let mut newest = dsl::messages
        .filter(dsl::conversation_id.eq(conversation_id))
        .into_boxed();
    if let Some(b) = before {
        newest = newest.filter(dsl::seq.lt(b));
    }
    let mut messages: Vec<Message> = newest
        .order(dsl::seq.desc())
        .limit(limit + 1)
        .select(Message::as_select())
        .load(conn)
        .await?;
    let mut more_before = messages.len() as i64 > limit;
    messages.truncate(usize::try_from(limit).unwrap_or(0));
    messages.reverse();
    if let Some(oldest) = <[Message]>::first(&messages).filter(|m| m.role == MessageRole::Tool) {
        let oldest = oldest.seq;
        let caller: Option<i64> = dsl::messages
            .filter(dsl::conversation_id.eq(conversation_id))
            .filter(dsl::seq.lt(oldest))
            .filter(dsl::role.ne("tool"))
            .select(diesel::dsl::max(dsl::seq))
            .first(conn)
            .await?;
        if let Some(from) = caller {
            let step: Vec<Message> = dsl::messages
                .filter(dsl::conversation_id.eq(conversation_id))
                .filter(dsl::seq.ge(from))
                .filter(dsl::seq.lt(oldest))
                .order(dsl::seq.asc())
                .select(Message::as_select())
                .load(conn)
                .await?;
            messages.splice(0..0, step);
            more_before = dsl::messages
                .filter(dsl::conversation_id.eq(conversation_id))
                .filter(dsl::seq.lt(from))
                .select(dsl::seq)
                .first::<i64>(conn)
                .await
                .optional()?
                .is_some();
        }
    }
    Ok(Window {
        messages,
        more_before,
    })
}

/// Up to `limit` messages written after `after` (a `seq`; none: from the first), oldest
/// first: one chunk of an export.
pub async fn chunk_after(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    after: Option<i64>,
    limit: i64,
) -> QueryResult<Vec<Message>> {
    let mut q = dsl::messages
        .filter(dsl::conversation_id.eq(conversation_id))
        .into_boxed();
    if let Some(a) = after {
        q = q.filter(dsl::seq.gt(a));
    }
    q.order(dsl::seq.asc())
        .limit(limit)
        .select(Message::as_select())
        .load(conn)
        .await
}
