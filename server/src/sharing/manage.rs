//! A conversation's links for its owner: list them (with how often each was read), change
//! one (hide tool details, expiry), revoke one. Admins may revoke anyone's link, and see
//! every live link of the server; an admin revoking another user's link is recorded in the
//! admin trail, in the revocation's own transaction ([`admin_change::apply`]).

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, QueryableByName, SelectableHelper};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::create::check_expiry;
use super::model::{ShareRow, ShareSummary, SELECT_SUMMARY};
use super::{Caller, SharingError};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::models::conversation;
use crate::domain::Actor;

/// Most links a list shows (newest first).
const MAX_LISTED: i64 = 200;

/// Every link to `conversation` (revoked ones too), newest first; 404 unless it is `owner`'s.
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Uuid,
    conversation_id: Uuid,
) -> Result<Vec<ShareSummary>, SharingError> {
    conversation::find_owned(conn, conversation_id, owner)
        .await?
        .ok_or(SharingError::NotFound("conversation"))?;
    // Raw SQL: the summary's counts are correlated aggregates (see SELECT_SUMMARY).
    let rows = diesel::sql_query(format!(
        "{SELECT_SUMMARY} WHERE s.conversation_id = $1 AND s.owner_id = $2 \
         ORDER BY s.created_at DESC, s.id LIMIT {MAX_LISTED}"
    ))
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(owner)
    .load(conn)
    .await?;
    Ok(rows)
}

/// One of `owner`'s links with its counts; 404 for anyone else's.
pub async fn summary(
    conn: &mut AsyncPgConnection,
    owner: Uuid,
    id: &str,
) -> Result<ShareSummary, SharingError> {
    // Raw SQL: the summary's counts are correlated aggregates (see SELECT_SUMMARY).
    let row: Option<ShareSummary> = diesel::sql_query(format!(
        "{SELECT_SUMMARY} WHERE s.id = $1 AND s.owner_id = $2"
    ))
    .bind::<Text, _>(id)
    .bind::<SqlUuid, _>(owner)
    .get_result(conn)
    .await
    .optional()?;
    row.ok_or(SharingError::NotFound("share"))
}

/// What `PATCH` changes; `None` keeps a field.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub redact_tools: Option<bool>,
    /// `Some(None)`: the link no longer expires.
    pub expires_at: Option<Option<DateTime<Utc>>>,
}

/// Changes one of `owner`'s links. A revoked link stays revoked (410); an expired one may be
/// given a new expiry.
pub async fn update(
    conn: &mut AsyncPgConnection,
    owner: Uuid,
    id: &str,
    changes: &Changes,
    now: DateTime<Utc>,
) -> Result<ShareSummary, SharingError> {
    if changes.redact_tools.is_none() && changes.expires_at.is_none() {
        return Err(SharingError::NothingToChange);
    }
    if let Some(expiry) = changes.expires_at {
        check_expiry(expiry, now)?;
    }
    let current = summary(conn, owner, id).await?;
    if current.share.revoked_at.is_some() {
        return Err(SharingError::Gone("the link was revoked".into()));
    }
    // Raw SQL: each field changes only when given (COALESCE / CASE), in one statement.
    diesel::sql_query(
        "UPDATE conversation_shares \
            SET redact_tools = COALESCE($3, redact_tools), \
                expires_at = CASE WHEN $4 THEN $5 ELSE expires_at END \
          WHERE id = $1 AND owner_id = $2",
    )
    .bind::<Text, _>(id)
    .bind::<SqlUuid, _>(owner)
    .bind::<Nullable<Bool>, _>(changes.redact_tools)
    .bind::<Bool, _>(changes.expires_at.is_some())
    .bind::<Nullable<Timestamptz>, _>(changes.expires_at.flatten())
    .execute(conn)
    .await?;
    summary(conn, owner, id).await
}

/// Revokes a link: its owner's, or any for an admin (recorded as `share.revoke` when it is
/// another user's). Revoking twice is not an error. 404 for a link the caller may not touch.
pub async fn revoke(
    conn: &mut AsyncPgConnection,
    caller: Caller,
    actor: &impl Actor,
    id: &str,
    now: DateTime<Utc>,
) -> Result<(), SharingError> {
    use crate::db::schema::conversation_shares as s;
    let row: Option<ShareRow> = s::table
        .find(id)
        .select(ShareRow::as_select())
        .first(conn)
        .await
        .optional()?;
    let row = match row {
        Some(r) if r.owner_id == caller.id || caller.admin => r,
        _ => return Err(SharingError::NotFound("share")),
    };
    if row.revoked_at.is_some() {
        return Ok(());
    }
    let by_admin = row.owner_id != caller.id;
    let change = by_admin.then(|| {
        NewChange::by(
            actor,
            "share.revoke",
            format!("link {} of {}", short(&row.id), row.owner_id),
        )
        .id(row.conversation_id)
        .before(serde_json::json!({
            "share": short(&row.id), "conversation_id": row.conversation_id,
            "owner_id": row.owner_id, "scope": row.scope, "expires_at": row.expires_at,
        }))
        .after(serde_json::json!({"revoked_at": now}))
    });
    let revoke = Revoke { id, now, change };
    admin_change::apply(conn, revoke).await
}

/// A revocation as one [`AdminWrite`]: the row and, for an admin's revocation of another
/// user's link, its trail row, in one transaction.
struct Revoke<'a> {
    id: &'a str,
    now: DateTime<Utc>,
    /// The trail row; `None` for the owner's own revocation.
    change: Option<NewChange>,
}

#[async_trait::async_trait]
impl AdminWrite for Revoke<'_> {
    type Output = ();
    type Error = SharingError;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<(), SharingError> {
        use crate::db::schema::conversation_shares as s;
        diesel::update(s::table.find(self.id).filter(s::revoked_at.is_null()))
            .set(s::revoked_at.eq(self.now))
            .execute(conn)
            .await?;
        Ok(())
    }

    fn trail(&self, _: &()) -> Option<NewChange> {
        self.change.clone()
    }
}

/// The start of a link's id: enough to tell links apart in the admin trail, never enough
/// to open one (the trail is read by people who should not get the link from it).
pub(crate) fn short(id: &str) -> String {
    format!("{}…", id.chars().take(6).collect::<String>())
}

/// A live link with its conversation's title and owner, as the admin list reads it.
#[derive(Debug, Clone, QueryableByName)]
pub struct AdminShare {
    #[diesel(embed)]
    pub summary: ShareSummary,
    #[diesel(sql_type = Text)]
    pub title: String,
    #[diesel(sql_type = Text)]
    pub owner: String,
}

/// A live link as the admin list shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AdminShareInfo {
    #[serde(flatten)]
    pub share: super::ShareInfo,
    /// The conversation's title.
    pub title: String,
    /// The owner's username.
    pub owner: String,
}

impl AdminShareInfo {
    pub fn of(s: AdminShare, base: &str, now: DateTime<Utc>) -> Self {
        Self {
            share: super::ShareInfo::of(s.summary, base, now),
            title: s.title,
            owner: s.owner,
        }
    }
}

/// Every live link of the server (neither revoked nor expired), newest first.
pub async fn admin_list(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<AdminShare>, SharingError> {
    // Raw SQL: the summary's counts are correlated aggregates (see SELECT_SUMMARY).
    let rows = diesel::sql_query(
        "SELECT x.*, c.title, u.username AS owner FROM (".to_owned()
            + SELECT_SUMMARY
            + " WHERE s.revoked_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > $1) \
               ORDER BY s.created_at DESC, s.id LIMIT $2) x \
               JOIN conversations c ON c.id = x.conversation_id \
               JOIN users u ON u.id = x.owner_id \
              ORDER BY x.created_at DESC, x.id",
    )
    .bind::<Timestamptz, _>(now)
    .bind::<diesel::sql_types::BigInt, _>(limit)
    .load(conn)
    .await?;
    Ok(rows)
}
