//! Refresh tokens: stored as SHA-256 hashes, rotated on use, grouped in families so that
//! the reuse of a spent token revokes every token descended from the same login (after a
//! short grace window for the just-replaced token).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::schema::refresh_tokens::dsl;

/// What presenting a refresh token led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Consumed {
    /// Valid and now spent (or the just-replaced token again within the grace window):
    /// issue a successor in the same family. `started` is when the family's sign-in was.
    Fresh {
        user_id: Uuid,
        family_id: Uuid,
        started: DateTime<Utc>,
    },
    /// Already spent, outside the grace window: the family has been revoked.
    Reused,
    /// Unknown, expired or revoked.
    Invalid,
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    family_id: Uuid,
    token_hash: &[u8],
    expires_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(dsl::refresh_tokens)
        .values((
            dsl::id.eq(Uuid::new_v4()),
            dsl::user_id.eq(user_id),
            dsl::family_id.eq(family_id),
            dsl::token_hash.eq(token_hash),
            dsl::expires_at.eq(expires_at),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Spends the token with `token_hash` in one conditional update. Presenting it again
/// revokes its family, unless it is the family's most recently spent token and was spent
/// less than `grace` ago (two tabs refreshing at once): then it counts as fresh once more.
pub async fn consume(
    conn: &mut AsyncPgConnection,
    token_hash: &[u8],
    grace: std::time::Duration,
) -> QueryResult<Consumed> {
    let spent: Option<(Uuid, Uuid)> = diesel::update(
        dsl::refresh_tokens
            .filter(dsl::token_hash.eq(token_hash))
            .filter(dsl::used_at.is_null())
            .filter(dsl::revoked_at.is_null())
            .filter(dsl::expires_at.gt(diesel::dsl::now)),
    )
    .set(dsl::used_at.eq(diesel::dsl::now))
    .returning((dsl::user_id, dsl::family_id))
    .get_result(conn)
    .await
    .optional()?;
    if let Some((user_id, family_id)) = spent {
        let started = family_started(conn, family_id).await?;
        return Ok(Consumed::Fresh {
            user_id,
            family_id,
            started,
        });
    }
    type Known = (Uuid, Uuid, Option<DateTime<Utc>>, Option<DateTime<Utc>>);
    let known: Option<Known> = dsl::refresh_tokens
        .filter(dsl::token_hash.eq(token_hash))
        .select((dsl::user_id, dsl::family_id, dsl::used_at, dsl::revoked_at))
        .first(conn)
        .await
        .optional()?;
    let Some((user_id, family_id, Some(used_at), revoked_at)) = known else {
        return Ok(Consumed::Invalid);
    };
    if revoked_at.is_some() {
        return Ok(Consumed::Invalid);
    }
    let grace = chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::zero());
    if Utc::now() - used_at < grace {
        let latest: Option<DateTime<Utc>> = dsl::refresh_tokens
            .filter(dsl::family_id.eq(family_id))
            .select(diesel::dsl::max(dsl::used_at))
            .first(conn)
            .await?;
        if latest == Some(used_at) {
            let started = family_started(conn, family_id).await?;
            return Ok(Consumed::Fresh {
                user_id,
                family_id,
                started,
            });
        }
    }
    revoke_family(conn, family_id).await?;
    Ok(Consumed::Reused)
}

/// When the family's first token (the sign-in) was issued.
async fn family_started(
    conn: &mut AsyncPgConnection,
    family_id: Uuid,
) -> QueryResult<DateTime<Utc>> {
    let started: Option<DateTime<Utc>> = dsl::refresh_tokens
        .filter(dsl::family_id.eq(family_id))
        .select(diesel::dsl::min(dsl::created_at))
        .first(conn)
        .await?;
    Ok(started.unwrap_or_else(Utc::now))
}

/// Revokes the family of the token with `token_hash` (logout). Unknown tokens are ignored.
pub async fn revoke_by_hash(conn: &mut AsyncPgConnection, token_hash: &[u8]) -> QueryResult<()> {
    let family: Option<Uuid> = dsl::refresh_tokens
        .filter(dsl::token_hash.eq(token_hash))
        .select(dsl::family_id)
        .first(conn)
        .await
        .optional()?;
    if let Some(family_id) = family {
        revoke_family(conn, family_id).await?;
    }
    Ok(())
}

pub async fn revoke_family(conn: &mut AsyncPgConnection, family_id: Uuid) -> QueryResult<()> {
    diesel::update(
        dsl::refresh_tokens
            .filter(dsl::family_id.eq(family_id))
            .filter(dsl::revoked_at.is_null()),
    )
    .set(dsl::revoked_at.eq(diesel::dsl::now))
    .execute(conn)
    .await
    .map(|_| ())
}

pub async fn revoke_all_for_user(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<()> {
    diesel::update(
        dsl::refresh_tokens
            .filter(dsl::user_id.eq(user_id))
            .filter(dsl::revoked_at.is_null()),
    )
    .set(dsl::revoked_at.eq(diesel::dsl::now))
    .execute(conn)
    .await
    .map(|_| ())
}
