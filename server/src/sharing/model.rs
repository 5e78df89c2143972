//! A share as its row holds it, and as the API shows it to its owner.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{Queryable, QueryableByName, Selectable};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who may read through a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Any signed-in account of this server.
    Org,
    /// Anyone with the link, signed in or not.
    Public,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Org => "org",
            Scope::Public => "public",
        }
    }

    /// The stored text; anything unknown reads as the narrower `org`.
    pub fn stored(s: &str) -> Self {
        if s == "public" {
            Scope::Public
        } else {
            Scope::Org
        }
    }
}

/// Whether a link still shows its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShareState {
    Live,
    Expired,
    Revoked,
}

/// One `conversation_shares` row.
#[derive(Debug, Clone, QueryableByName, Queryable, Selectable)]
#[diesel(table_name = crate::db::schema::conversation_shares)]
#[diesel(check_for_backend(diesel::pg::Pg))]
pub struct ShareRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = SqlUuid)]
    pub conversation_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub owner_id: Uuid,
    #[diesel(sql_type = Text)]
    pub scope: String,
    #[diesel(sql_type = Bool)]
    pub redact_tools: bool,
    #[diesel(sql_type = BigInt)]
    pub snapshot_seq: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub revoked_at: Option<DateTime<Utc>>,
}

impl ShareRow {
    pub fn scope(&self) -> Scope {
        Scope::stored(&self.scope)
    }

    pub fn state(&self, now: DateTime<Utc>) -> ShareState {
        if self.revoked_at.is_some() {
            ShareState::Revoked
        } else if self.expires_at.is_some_and(|t| t <= now) {
            ShareState::Expired
        } else {
            ShareState::Live
        }
    }
}

/// The columns of [`ShareRow`], for statements that read it (alias `s`).
pub(crate) const ROW_COLUMNS: &str = "s.id, s.conversation_id, s.owner_id, s.scope, \
    s.redact_tools, s.snapshot_seq, s.expires_at, s.created_at, s.revoked_at";

/// A row with what its owner sees about it: how much it shows and how often it was read.
#[derive(Debug, Clone, QueryableByName)]
pub struct ShareSummary {
    #[diesel(embed)]
    pub share: ShareRow,
    #[diesel(sql_type = BigInt)]
    pub message_count: i64,
    #[diesel(sql_type = BigInt)]
    pub views: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_viewed_at: Option<DateTime<Utc>>,
}

/// Selects [`ShareSummary`] rows (alias `s`; add `WHERE ...`).
/// Raw SQL: the counts are correlated aggregates over `messages` and `share_views`.
pub(crate) const SELECT_SUMMARY: &str = "SELECT s.id, s.conversation_id, s.owner_id, s.scope, \
        s.redact_tools, s.snapshot_seq, s.expires_at, s.created_at, s.revoked_at, \
        (SELECT count(*) FROM messages m WHERE m.conversation_id = s.conversation_id \
            AND m.seq <= s.snapshot_seq) AS message_count, \
        (SELECT COALESCE(sum(v.views), 0)::BIGINT FROM share_views v WHERE v.share_id = s.id) \
            AS views, \
        (SELECT max(v.viewed_at) FROM share_views v WHERE v.share_id = s.id) AS last_viewed_at \
   FROM conversation_shares s";

/// A link as its owner sees it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ShareInfo {
    /// The link's secret id (`/s/{id}`).
    pub id: String,
    /// The page that shows it.
    pub url: String,
    pub conversation_id: Uuid,
    pub scope: Scope,
    pub redact_tools: bool,
    /// Null: never.
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub state: ShareState,
    /// Messages in the snapshot (tool results included).
    pub message_count: i64,
    /// Times it was read (pages, files, copies), every reader counted.
    pub views: i64,
    pub last_viewed_at: Option<DateTime<Utc>>,
}

impl ShareInfo {
    /// The API shape of `s`; `base` is the address users open (`https://chat.example.com`).
    pub fn of(s: ShareSummary, base: &str, now: DateTime<Utc>) -> Self {
        let state = s.share.state(now);
        Self {
            url: format!("{}/s/{}", base.trim_end_matches('/'), s.share.id),
            conversation_id: s.share.conversation_id,
            scope: s.share.scope(),
            redact_tools: s.share.redact_tools,
            expires_at: s.share.expires_at,
            created_at: s.share.created_at,
            revoked_at: s.share.revoked_at,
            state,
            message_count: s.message_count,
            views: s.views,
            last_viewed_at: s.last_viewed_at,
            id: s.share.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(expires: Option<DateTime<Utc>>, revoked: Option<DateTime<Utc>>) -> ShareRow {
        ShareRow {
            id: "x".repeat(22),
            conversation_id: Uuid::nil(),
            owner_id: Uuid::nil(),
            scope: "public".into(),
            redact_tools: false,
            snapshot_seq: 1,
            expires_at: expires,
            created_at: Utc::now(),
            revoked_at: revoked,
        }
    }

    #[test]
    fn state_follows_revocation_then_expiry() {
        let now = Utc::now();
        let hour = chrono::Duration::hours(1);
        assert_eq!(row(None, None).state(now), ShareState::Live);
        assert_eq!(row(Some(now + hour), None).state(now), ShareState::Live);
        assert_eq!(row(Some(now), None).state(now), ShareState::Expired);
        assert_eq!(
            row(Some(now - hour), Some(now)).state(now),
            ShareState::Revoked
        );
        assert_eq!(row(None, None).scope(), Scope::Public);
        assert_eq!(Scope::stored("anything"), Scope::Org);
    }
}
