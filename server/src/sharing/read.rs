//! Reading through a link. Every reading — a page, a file, a copy — passes [`open`]
//! (unknown: 404; revoked, expired, or its owner no longer able to share it: 410; `org`
//! without signing in: 401), the link's rate ([`super::gate`]) and is counted
//! ([`super::views`]) in the reading's own transaction: a reading that cannot be counted is
//! not served. A page is a window of the snapshot's latest messages with a cursor to older
//! ones, as the owner's own conversation reads: never the whole snapshot at once.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::gate::ReadGate;
use super::model::{Scope, ShareRow, ShareState, ROW_COLUMNS};
use super::redact::{self, Parts};
use super::views::{self, Action, AdminReader};
use super::SharingError;
use crate::db::models::message::Message;
use crate::db::models::message_window;
use crate::domain::{Attachment, MessageRole, MessageStatus};

/// Most messages a copy holds (a conversation holds at most this many by default).
pub const MAX_SNAPSHOT_MESSAGES: i64 = 5_000;

/// Who reads: a signed-in account, or nobody (a public link), and from where.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub user: Option<Uuid>,
    /// The client's address, for the audit row.
    pub address: Option<String>,
    /// Set when the reader is an admin: their reading of another user's link is also an
    /// admin's reading of a conversation, recorded in the admin trail.
    pub admin: Option<AdminReader>,
}

/// Which messages of the snapshot a page shows.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// The messages before this `seq` (none: the newest).
    pub before: Option<i64>,
    /// At most this many (a tool step is never cut: see [`message_window::window`]).
    pub limit: i64,
}

/// A link that may be read, with what the page shows about it.
#[derive(Debug, Clone, QueryableByName)]
pub struct Opened {
    #[diesel(embed)]
    pub share: ShareRow,
    #[diesel(sql_type = Text)]
    pub title: String,
    /// The owner as people know them (their directory display name, else the username).
    #[diesel(sql_type = Text)]
    pub owner_name: String,
    #[diesel(sql_type = Bool)]
    owner_disabled: bool,
    #[diesel(sql_type = Bool)]
    owner_may_share_publicly: bool,
}

/// The link `id` if `viewer` may read it now.
pub async fn open(
    conn: &mut AsyncPgConnection,
    id: &str,
    viewer: &Viewer,
    now: DateTime<Utc>,
) -> Result<Opened, SharingError> {
    if !super::looks_like_share_id(id) {
        return Err(SharingError::NotFound("shared conversation"));
    }
    let found: Option<Opened> = diesel::sql_query(format!(
        "SELECT {ROW_COLUMNS}, c.title, \
                COALESCE(NULLIF(btrim(su.display_name), ''), u.username) AS owner_name, \
                u.disabled AS owner_disabled, r.can_share_public AS owner_may_share_publicly \
           FROM conversation_shares s \
           JOIN conversations c ON c.id = s.conversation_id \
           JOIN users u ON u.id = s.owner_id \
           JOIN roles r ON r.name = u.role \
           LEFT JOIN scim_users su ON su.user_id = u.id \
          WHERE s.id = $1"
    ))
    .bind::<Text, _>(id)
    .get_result(conn)
    .await
    .optional()?;
    let opened = found.ok_or(SharingError::NotFound("shared conversation"))?;
    match opened.share.state(now) {
        ShareState::Revoked => return Err(SharingError::Gone("the link was revoked".into())),
        ShareState::Expired => return Err(SharingError::Gone("the link has expired".into())),
        ShareState::Live => {}
    }
    // Governance follows the owner: a disabled account's links, and public links of a role
    // an admin no longer lets share publicly, stop working (and work again if that changes).
    if opened.owner_disabled {
        return Err(SharingError::Gone("its owner's account is disabled".into()));
    }
    let scope = opened.share.scope();
    if scope == Scope::Public && !opened.owner_may_share_publicly {
        return Err(SharingError::Gone(
            "its owner may no longer share conversations publicly".into(),
        ));
    }
    if scope == Scope::Org && viewer.user.is_none() {
        return Err(SharingError::SignInRequired);
    }
    Ok(opened)
}

/// A window of the snapshot's messages, oldest first, tools' details hidden when the
/// link says so; and the `seq` to ask from for older ones, when there are any.
pub async fn snapshot_page(
    conn: &mut AsyncPgConnection,
    share: &ShareRow,
    page: Page,
) -> Result<(Vec<Message>, Option<i64>), SharingError> {
    let end = share.snapshot_seq.saturating_add(1);
    let before = page.before.map_or(end, |b| b.min(end));
    let window =
        message_window::window(conn, share.conversation_id, Some(before), page.limit).await?;
    let older = window
        .more_before
        .then(|| <[Message]>::first(&window.messages).map(|m| m.seq))
        .flatten();
    let mut messages = window.messages;
    if share.redact_tools {
        for m in &mut messages {
            hide(m);
        }
    }
    Ok((messages, older))
}

/// `m` with the tools' details replaced by markers.
pub(crate) fn hide(m: &mut Message) {
    let parts = Parts {
        content: std::mem::take(&mut m.content),
        tool_calls: m.tool_calls.take(),
        citations: m.citations.take(),
    };
    let hidden = redact::hide(m.role, parts);
    m.content = hidden.content;
    m.tool_calls = hidden.tool_calls;
    m.citations = hidden.citations;
}

/// A message of a shared conversation as its page shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SharedMessage {
    pub id: Uuid,
    pub role: MessageRole,
    pub content: String,
    /// `[{id, name, arguments}]`; arguments hidden when the link hides tool details.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tool_calls: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Files the message was sent with; each is downloadable through the link
    /// (`/api/shares/{id}/files/{path}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub citations: Option<serde_json::Value>,
    pub status: MessageStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<Message> for SharedMessage {
    fn from(m: Message) -> Self {
        Self {
            attachments: m
                .attachments
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            id: m.id,
            role: m.role,
            content: m.content,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
            citations: m.citations,
            status: m.status,
            status_reason: m.status_reason,
            created_at: m.created_at,
        }
    }
}

/// The owner of a shared conversation, as readers see them.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SharedOwner {
    pub display_name: String,
}

/// A shared conversation as its page shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SharedConversation {
    pub id: String,
    pub title: String,
    pub owner: SharedOwner,
    pub scope: Scope,
    pub redact_tools: bool,
    /// When the link was made: the moment of the snapshot.
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The reader made the link.
    pub mine: bool,
    /// The reader is signed in, so may continue the conversation as a copy of their own.
    pub can_fork: bool,
    /// The snapshot's messages in this page (the latest ones, unless `?before=` asked for
    /// older), oldest first.
    pub messages: Vec<SharedMessage>,
    /// Older messages exist: ask for them with `?before=` this cursor.
    pub messages_before: Option<String>,
}

/// One page of the link `id` for `viewer`: checked, admitted, read and counted in one
/// transaction; with the `seq` older messages are read from, when there are any (the caller
/// makes it the `messages_before` cursor).
pub async fn read(
    conn: &mut AsyncPgConnection,
    gate: &ReadGate,
    id: &str,
    viewer: &Viewer,
    page: Page,
    now: DateTime<Utc>,
) -> Result<(SharedConversation, Option<i64>), SharingError> {
    let id = id.to_owned();
    let viewer = viewer.clone();
    conn.transaction(|conn| {
        async move {
            let opened = open(conn, &id, &viewer, now).await?;
            admit(gate, &opened.share)?;
            let (messages, older) = snapshot_page(conn, &opened.share, page).await?;
            views::record(conn, &opened.share, &viewer, Action::Read, now).await?;
            let shared = SharedConversation {
                title: opened.title,
                owner: SharedOwner {
                    display_name: opened.owner_name,
                },
                scope: opened.share.scope(),
                redact_tools: opened.share.redact_tools,
                created_at: opened.share.created_at,
                expires_at: opened.share.expires_at,
                mine: viewer.user == Some(opened.share.owner_id),
                can_fork: viewer.user.is_some(),
                messages: messages.into_iter().map(SharedMessage::from).collect(),
                messages_before: None,
                id: opened.share.id,
            };
            Ok((shared, older))
        }
        .scope_boxed()
    })
    .await
}

/// Counts a reading against the link's rate.
pub fn admit(gate: &ReadGate, share: &ShareRow) -> Result<(), SharingError> {
    gate.admit_link(&share.id)
        .map_err(SharingError::RateLimited)
}
