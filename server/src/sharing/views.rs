//! The audit of readings through links. A reading — a page of messages, a file, a copy —
//! counts into one `share_views` row per link, viewer, action (and file) and minute: the
//! row says who read (the account, else the client's address), what, in which minute, last
//! when and how many times. It is written in the reading's own transaction, so a reading
//! that cannot be counted is not served; and a flood of readings is one row a minute, not a
//! row per request.
//!
//! An admin reading another user's link leaves a `conversation.view` in the admin trail
//! too, as their reading of a conversation through the admin pages does: the admin list of
//! links hands them every link, so reading through one is an admin's reading.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::model::ShareRow;
use super::read::Viewer;
use super::SharingError;
use crate::db::models::admin_change::{self, NewChange};
use crate::domain::Actor;

/// What a reading did, as its audit row says.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    Read,
    File(&'a str),
    Fork,
}

impl Action<'_> {
    fn parts(&self) -> (&'static str, Option<&str>) {
        match self {
            Action::Read => ("read", None),
            Action::File(path) => ("file", Some(path)),
            Action::Fork => ("fork", None),
        }
    }
}

/// An admin as the trail names them.
#[derive(Debug, Clone)]
pub struct AdminReader {
    pub id: uuid::Uuid,
    pub name: String,
}

impl Actor for AdminReader {
    fn actor_id(&self) -> uuid::Uuid {
        self.id
    }
    fn actor_name(&self) -> &str {
        &self.name
    }
}

/// Counts one reading of `share` by `viewer` (and trails an admin's reading).
pub async fn record(
    conn: &mut AsyncPgConnection,
    share: &ShareRow,
    viewer: &Viewer,
    action: Action<'_>,
    now: DateTime<Utc>,
) -> Result<(), SharingError> {
    let (kind, file) = action.parts();
    // The key: the account, else a digest of the address (the same rule the migration
    // applied to the rows written before counting).
    // Raw SQL: ON CONFLICT on an expression index (`COALESCE(file, '')`), a computed key.
    diesel::sql_query(
        "INSERT INTO share_views \
           (share_id, viewer_id, viewer_address, action, file, viewed_at, minute, views, \
            viewer_key) \
         VALUES ($1, $2, $3, $4, $5, $6, date_trunc('minute', $6, 'UTC'), 1, \
                 COALESCE('user:' || $2::text, \
                          'addr:' || encode(sha256(convert_to($3, 'UTF8')), 'hex'), \
                          'anonymous')) \
         ON CONFLICT (share_id, viewer_key, action, (COALESCE(file, '')), minute) DO UPDATE \
            SET views = share_views.views + 1, \
                viewed_at = GREATEST(share_views.viewed_at, EXCLUDED.viewed_at), \
                viewer_address = COALESCE(EXCLUDED.viewer_address, share_views.viewer_address)",
    )
    .bind::<Text, _>(&share.id)
    .bind::<Nullable<SqlUuid>, _>(viewer.user)
    .bind::<Nullable<Text>, _>(viewer.address.as_deref())
    .bind::<Text, _>(kind)
    .bind::<Nullable<Text>, _>(file)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await?;
    if let Some(admin) = viewer.admin.as_ref().filter(|a| a.id != share.owner_id) {
        let change = NewChange::by(
            admin,
            "conversation.view",
            format!("{} of {}", share.conversation_id, share.owner_id),
        )
        .id(share.conversation_id)
        .after(serde_json::json!({
            "conversation_id": share.conversation_id, "owner_id": share.owner_id,
            "via": "share", "share": super::manage::short(&share.id), "action": kind,
            "file": file,
        }));
        admin_change::record(conn, change).await?;
    }
    Ok(())
}
