//! Continuing a conversation as a copy: a new conversation of the caller's holding the
//! messages of another — their own, or a link's snapshot they may read — up to and including
//! one user or assistant message. An assistant message's tool results come with it, so the
//! copy's history is valid for the model as it is. Nothing else is copied: no usage (the
//! tokens were spent and charged in the original), no budget, no workspace file. Messages
//! are copied a chunk at a time ([`COPY_CHUNK`]): a long conversation is never held whole.
//!
//! Files: a copy of one's own conversation keeps its attachments and the files its tool
//! results saved (they name files of the same workspace). A copy from another user's link
//! does not ([`super::fork_files`]): the files are in the sharer's workspace, and a reference
//! names a path in the *reader's* — where the model would read, and the chat show, a
//! different file or none. Such a message names the files instead, as not copied.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::gate::ReadGate;
use super::read::{self, Viewer};
use super::views::{self, Action};
use super::SharingError;
use crate::db::models::conversation::{self, Conversation};
use crate::db::models::message::{self, Message, NewMessage};
use crate::db::schema::messages::dsl;
use crate::domain::MessageRole;

/// Longest title a conversation may have, in characters (as `PATCH` allows).
const MAX_TITLE_CHARS: usize = 200;
/// What the copy's title ends with.
const COPY_SUFFIX: &str = " (copy)";
/// Most tool results one assistant message may bring along.
const MAX_STEP_RESULTS: i64 = 256;
/// Messages read and written at a time while copying.
const COPY_CHUNK: i64 = 200;

/// What is copied from.
#[derive(Debug, Clone)]
pub enum Source {
    /// One of the caller's own conversations.
    Own(Uuid),
    /// A link the caller may read (its snapshot only, its redaction kept).
    Share { id: String, viewer: Viewer },
}

/// What a source gives a copy.
struct Origin {
    conversation_id: Uuid,
    /// Messages after this seq are not part of the source (a link's snapshot).
    last_seq: i64,
    redact: bool,
    title: String,
    model: Option<String>,
    system_prompt: Option<String>,
    /// The source's files are in another user's workspace.
    foreign_files: bool,
    /// The link copied from (its reading is counted once the copy is made).
    share: Option<super::model::ShareRow>,
}

async fn origin(
    conn: &mut AsyncPgConnection,
    gate: &ReadGate,
    caller: Uuid,
    source: &Source,
    now: DateTime<Utc>,
) -> Result<Origin, SharingError> {
    match source {
        Source::Own(id) => {
            let c = conversation::find_owned(conn, *id, caller)
                .await?
                .ok_or(SharingError::NotFound("conversation"))?;
            Ok(Origin {
                conversation_id: c.id,
                last_seq: i64::MAX,
                redact: false,
                title: c.title,
                model: c.model,
                system_prompt: c.system_prompt,
                foreign_files: false,
                share: None,
            })
        }
        Source::Share { id, viewer } => {
            let opened = read::open(conn, id, viewer, now).await?;
            read::admit(gate, &opened.share)?;
            Ok(Origin {
                conversation_id: opened.share.conversation_id,
                last_seq: opened.share.snapshot_seq,
                redact: opened.share.redact_tools,
                title: opened.title,
                // The sharer's model and instructions are theirs: the copy starts with the
                // reader's defaults.
                model: None,
                system_prompt: None,
                foreign_files: opened.share.owner_id != caller,
                share: Some(opened.share),
            })
        }
    }
}

/// Where a copy up to `at` ends: its `seq`, and the ids of the tool calls whose results
/// come with it.
async fn fork_point(
    conn: &mut AsyncPgConnection,
    from: &Origin,
    at: Uuid,
) -> Result<(i64, Vec<String>), SharingError> {
    let not_here = || {
        SharingError::InvalidForkPoint(
            "at_message_id must be a user or assistant message of this conversation".into(),
        )
    };
    let target: (i64, MessageRole, Option<serde_json::Value>) = dsl::messages
        .filter(dsl::id.eq(at))
        .filter(dsl::conversation_id.eq(from.conversation_id))
        .filter(dsl::seq.le(from.last_seq))
        .select((dsl::seq, dsl::role, dsl::tool_calls))
        .first(conn)
        .await
        .optional()?
        .ok_or_else(not_here)?;
    let (seq, role, calls) = target;
    if role == MessageRole::Tool {
        return Err(not_here());
    }
    Ok((seq, call_ids(calls.as_ref())))
}

/// Copies the messages of `from` up to `seq` (at most [`read::MAX_SNAPSHOT_MESSAGES`]) into
/// conversation `into`, a chunk at a time, then the results of the tool calls `ids`.
async fn copy_messages(
    conn: &mut AsyncPgConnection,
    from: &Origin,
    (seq, ids): (i64, Vec<String>),
    into: Uuid,
) -> Result<(), SharingError> {
    let mut after = i64::MIN;
    let mut left = read::MAX_SNAPSHOT_MESSAGES;
    while left > 0 {
        let chunk: Vec<Message> = dsl::messages
            .filter(dsl::conversation_id.eq(from.conversation_id))
            .filter(dsl::seq.gt(after))
            .filter(dsl::seq.le(seq))
            .order(dsl::seq.asc())
            .limit(COPY_CHUNK.min(left))
            .select(Message::as_select())
            .load(conn)
            .await?;
        let Some(last) = chunk.last().map(|m| m.seq) else {
            break;
        };
        let full = chunk.len() as i64 == COPY_CHUNK.min(left);
        left -= chunk.len() as i64;
        after = last;
        let rows: Vec<NewMessage> = chunk.into_iter().map(|m| copied(m, into, from)).collect();
        message::insert_many(conn, &rows).await?;
        if !full {
            break;
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    let results: Vec<Message> = dsl::messages
        .filter(dsl::conversation_id.eq(from.conversation_id))
        .filter(dsl::seq.gt(seq))
        .filter(dsl::seq.le(from.last_seq))
        .order(dsl::seq.asc())
        .limit(MAX_STEP_RESULTS)
        .select(Message::as_select())
        .load(conn)
        .await?;
    let rows: Vec<NewMessage> = results
        .into_iter()
        .take_while(|m| m.role == MessageRole::Tool)
        .filter(|m| m.tool_call_id.as_ref().is_some_and(|id| ids.contains(id)))
        .map(|m| copied(m, into, from))
        .collect();
    message::insert_many(conn, &rows).await?;
    Ok(())
}

/// The ids of the tool calls a stored `tool_calls` column holds.
fn call_ids(calls: Option<&serde_json::Value>) -> Vec<String> {
    calls
        .and_then(|v| v.as_array())
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| c.get("id").and_then(|id| id.as_str()).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `title` with the copy suffix, within the title limit.
fn copy_title(title: &str) -> String {
    let room = MAX_TITLE_CHARS - COPY_SUFFIX.chars().count();
    let base: String = title.chars().take(room).collect();
    format!("{}{COPY_SUFFIX}", base.trim_end())
}

/// `m` as a message of conversation `into`.
fn copied(mut m: Message, into: Uuid, from: &Origin) -> NewMessage {
    if from.redact {
        read::hide(&mut m);
    }
    if from.foreign_files {
        super::fork_files::drop_foreign_files(&mut m);
    }
    NewMessage {
        id: Uuid::new_v4(),
        conversation_id: into,
        role: m.role,
        content: m.content,
        tool_calls: m.tool_calls,
        tool_call_id: m.tool_call_id,
        attachments: m.attachments,
        citations: m.citations,
        status: m.status,
        status_reason: m.status_reason,
        model: m.model,
        input_tokens: None,
        output_tokens: None,
        duration_ms: None,
    }
}

/// A new conversation of `caller`'s holding `source` up to message `at`; a copy from a
/// link is a reading of it (admitted by `gate`, counted).
pub async fn fork(
    conn: &mut AsyncPgConnection,
    gate: &ReadGate,
    caller: Uuid,
    source: Source,
    at: Uuid,
    now: DateTime<Utc>,
) -> Result<Conversation, SharingError> {
    conn.transaction(|conn| {
        async move {
            let from = origin(conn, gate, caller, &source, now).await?;
            // The fork point is checked before anything is made.
            let point = fork_point(conn, &from, at).await?;
            let title = copy_title(&from.title);
            let mut made =
                conversation::create(conn, caller, Some(&title), from.model.as_deref()).await?;
            if from.system_prompt.is_some() {
                let changes = conversation::Changes {
                    system_prompt: Some(from.system_prompt.clone()),
                    ..Default::default()
                };
                made = conversation::update_owned(conn, made.id, caller, &changes)
                    .await?
                    .ok_or(SharingError::NotFound("conversation"))?;
            }
            copy_messages(conn, &from, point, made.id).await?;
            if let Source::Own(original) = &source {
                made.forked_from = conversation::set_forked_from(conn, made.id, *original).await?;
            }
            match (&source, &from.share) {
                (Source::Share { viewer, .. }, Some(share)) => {
                    views::record(conn, share, viewer, Action::Fork, now).await?;
                }
                _ => {
                    copy_pins(conn, from.conversation_id, made.id).await?;
                    made = copy_setup(conn, from.conversation_id, made.id, caller).await?;
                }
            }
            Ok(made)
        }
        .scope_boxed()
    })
    .await
}

/// The knowledge collections pinned to one's own conversation, pinned to its copy too.
async fn copy_pins(conn: &mut AsyncPgConnection, from: Uuid, to: Uuid) -> Result<(), SharingError> {
    use crate::db::schema::conversation_collections as cc;
    let pinned = cc::table
        .filter(cc::conversation_id.eq(from))
        .select((to.into_sql::<SqlUuid>(), cc::collection_id));
    diesel::insert_into(cc::table)
        .values(pinned)
        .into_columns((cc::conversation_id, cc::collection_id))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// One's own copy goes on with the original's assistant and memory switch.
async fn copy_setup(
    conn: &mut AsyncPgConnection,
    from: Uuid,
    to: Uuid,
    caller: Uuid,
) -> Result<Conversation, SharingError> {
    // Raw SQL: an UPDATE … FROM (the original's row), which the DSL cannot say.
    diesel::sql_query(
        "UPDATE conversations c SET assistant_id = o.assistant_id, \
                memory_enabled = o.memory_enabled \
           FROM conversations o WHERE c.id = $2 AND o.id = $1",
    )
    .bind::<SqlUuid, _>(from)
    .bind::<SqlUuid, _>(to)
    .execute(conn)
    .await?;
    conversation::find_owned(conn, to, caller)
        .await?
        .ok_or(SharingError::NotFound("conversation"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_titles_fit_and_say_so() {
        assert_eq!(copy_title("Plans"), "Plans (copy)");
        let long = "x".repeat(300);
        let t = copy_title(&long);
        assert_eq!(t.chars().count(), MAX_TITLE_CHARS);
        assert!(t.ends_with(" (copy)"));
    }

    #[test]
    fn call_ids_read_the_stored_shape() {
        let calls = serde_json::json!([{"id": "a", "name": "x", "arguments": {}}, {"id": "b"}]);
        assert_eq!(call_ids(Some(&calls)), ["a", "b"]);
        assert!(call_ids(None).is_empty());
        assert!(call_ids(Some(&serde_json::json!("odd"))).is_empty());
    }
}
