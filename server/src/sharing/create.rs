//! Making a link: only to one's own conversation, public only when the role allows it, with
//! an expiry within a year, at most [`MAX_LIVE_SHARES`] live links per conversation. The
//! snapshot is the conversation's last message at this moment.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{ExpressionMethods, OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::model::{Scope, ShareSummary, SELECT_SUMMARY};
use super::token::new_share_id;
use super::SharingError;
use crate::db::schema::conversation_shares as s;

/// Most links to one conversation that are neither revoked nor expired.
pub const MAX_LIVE_SHARES: i64 = 50;
/// The longest a link may last.
pub const MAX_LIFETIME_DAYS: i64 = 365;

/// What the owner asks for.
#[derive(Debug, Clone)]
pub struct NewShare {
    pub scope: Scope,
    /// None: the link never expires (until revoked).
    pub expires_at: Option<DateTime<Utc>>,
    pub redact_tools: bool,
}

/// `Ok` for no expiry, or one in the future and at most a year away.
pub fn check_expiry(
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), SharingError> {
    match expires_at {
        Some(t) if t <= now => Err(SharingError::InvalidExpiry(
            "expires_at must be in the future".into(),
        )),
        Some(t) if t > now + chrono::Duration::days(MAX_LIFETIME_DAYS) => {
            Err(SharingError::InvalidExpiry(format!(
                "a link may last at most {MAX_LIFETIME_DAYS} days; leave expires_at out for one \
                 that lasts until revoked"
            )))
        }
        _ => Ok(()),
    }
}

#[derive(QueryableByName)]
struct Source {
    #[diesel(sql_type = Nullable<BigInt>)]
    last_seq: Option<i64>,
    #[diesel(sql_type = Bool)]
    can_share_public: bool,
    #[diesel(sql_type = BigInt)]
    live: i64,
}

/// A new link to `conversation` of `owner`'s.
pub async fn create(
    conn: &mut AsyncPgConnection,
    owner: Uuid,
    conversation: Uuid,
    asked: &NewShare,
    now: DateTime<Utc>,
) -> Result<ShareSummary, SharingError> {
    check_expiry(asked.expires_at, now)?;
    let asked = asked.clone();
    conn.transaction(|conn| {
        async move {
            // The conversation row is locked while the live links are counted, so two
            // requests at once cannot both take the last place.
            // Raw SQL: correlated counts and `FOR UPDATE OF c` (the DSL locks every joined table).
            let source: Option<Source> = diesel::sql_query(
                "SELECT (SELECT max(m.seq) FROM messages m WHERE m.conversation_id = c.id) AS last_seq, \
                        r.can_share_public, \
                        (SELECT count(*) FROM conversation_shares s \
                          WHERE s.conversation_id = c.id AND s.revoked_at IS NULL \
                            AND (s.expires_at IS NULL OR s.expires_at > $3)) AS live \
                   FROM conversations c JOIN users u ON u.id = c.user_id \
                   JOIN roles r ON r.name = u.role \
                  WHERE c.id = $1 AND c.user_id = $2 \
                    FOR UPDATE OF c",
            )
            .bind::<SqlUuid, _>(conversation)
            .bind::<SqlUuid, _>(owner)
            .bind::<Timestamptz, _>(now)
            .get_result(conn)
            .await
            .optional()?;
            let source = source.ok_or(SharingError::NotFound("conversation"))?;
            let snapshot = source.last_seq.ok_or(SharingError::NothingToShare)?;
            if asked.scope == Scope::Public && !source.can_share_public {
                return Err(SharingError::PublicNotAllowed);
            }
            if source.live >= MAX_LIVE_SHARES {
                return Err(SharingError::Limit(format!(
                    "this conversation already has {} live links, the most it may have; \
                     revoke one first",
                    source.live
                )));
            }
            let id = new_share_id();
            diesel::insert_into(s::table)
                .values((
                    s::id.eq(&id),
                    s::conversation_id.eq(conversation),
                    s::owner_id.eq(owner),
                    s::scope.eq(asked.scope.as_str()),
                    s::redact_tools.eq(asked.redact_tools),
                    s::snapshot_seq.eq(snapshot),
                    s::expires_at.eq(asked.expires_at),
                    s::created_at.eq(now),
                ))
                .execute(conn)
                .await?;
            // Raw SQL: the summary's counts are correlated aggregates (see SELECT_SUMMARY).
            let made: ShareSummary = diesel::sql_query(format!("{SELECT_SUMMARY} WHERE s.id = $1"))
                .bind::<Text, _>(&id)
                .get_result(conn)
                .await?;
            Ok(made)
        }
        .scope_boxed()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_future_and_within_a_year() {
        let now = Utc::now();
        assert!(check_expiry(None, now).is_ok());
        assert!(check_expiry(Some(now + chrono::Duration::days(1)), now).is_ok());
        assert!(check_expiry(Some(now + chrono::Duration::days(365)), now).is_ok());
        assert!(check_expiry(Some(now), now).is_err());
        assert!(check_expiry(Some(now - chrono::Duration::seconds(1)), now).is_err());
        assert!(check_expiry(Some(now + chrono::Duration::days(366)), now).is_err());
    }
}
