//! Personal API keys: rows hold the SHA-256 of the secret, never the secret.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use crate::db::schema::{api_keys::dsl, users::dsl as users};
use crate::domain::KeyScopes;

/// A key as its owner (or an admin) sees it: everything but the secret.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = crate::db::schema::api_keys)]
pub struct ApiKey {
    pub id: Uuid,
    #[serde(skip)]
    pub user_id: Uuid,
    pub name: String,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    /// `chat`, and `files` when its turns may use the workspace file tools.
    pub scopes: Vec<String>,
}

/// A key with its owner's name, for the admin list.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OwnedKey {
    #[serde(flatten)]
    pub key: ApiKey,
    pub user_id: Uuid,
    pub username: String,
}

/// What a presented key resolves to: the key and its owner's account as they are now.
#[derive(Debug, Clone, Queryable)]
pub struct KeyOwner {
    pub key_id: Uuid,
    pub expires_at: Option<DateTime<Utc>>,
    pub scopes: Vec<String>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub user_id: Uuid,
    pub username: String,
    pub role: String,
    pub disabled: bool,
    pub token_version: i32,
}

/// Most keys one user may hold.
pub const MAX_KEYS_PER_USER: i64 = 50;

pub async fn insert(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    name: &str,
    prefix: &str,
    secret_hash: &[u8],
    expires_at: Option<DateTime<Utc>>,
    scopes: KeyScopes,
) -> QueryResult<ApiKey> {
    diesel::insert_into(dsl::api_keys)
        .values((
            dsl::id.eq(Uuid::new_v4()),
            dsl::user_id.eq(user_id),
            dsl::name.eq(name),
            dsl::prefix.eq(prefix),
            dsl::secret_hash.eq(secret_hash),
            dsl::expires_at.eq(expires_at),
            dsl::scopes.eq(scopes.names()),
        ))
        .returning(ApiKey::as_returning())
        .get_result(conn)
        .await
}

pub async fn count_owned(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<i64> {
    dsl::api_keys
        .filter(dsl::user_id.eq(user_id))
        .count()
        .get_result(conn)
        .await
}

/// The user's keys, newest first.
pub async fn list_owned(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<Vec<ApiKey>> {
    dsl::api_keys
        .filter(dsl::user_id.eq(user_id))
        .order((dsl::created_at.desc(), dsl::id.desc()))
        .select(ApiKey::as_select())
        .load(conn)
        .await
}

/// Everyone's keys with their owners, newest first (at most `limit`).
pub async fn list_all(conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<OwnedKey>> {
    let rows: Vec<(ApiKey, String)> = dsl::api_keys
        .inner_join(users::users)
        .order((dsl::created_at.desc(), dsl::id.desc()))
        .limit(limit)
        .select((ApiKey::as_select(), users::username))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(key, username)| OwnedKey {
            user_id: key.user_id,
            key,
            username,
        })
        .collect())
}

/// One key with its owner's name (for the admin audit trail).
pub async fn find_with_owner(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> QueryResult<Option<OwnedKey>> {
    let row: Option<(ApiKey, String)> = dsl::api_keys
        .inner_join(users::users)
        .filter(dsl::id.eq(id))
        .select((ApiKey::as_select(), users::username))
        .first(conn)
        .await
        .optional()?;
    Ok(row.map(|(key, username)| OwnedKey {
        user_id: key.user_id,
        key,
        username,
    }))
}

/// Deletes the key if `owner` (or anyone, with `None`) holds it; false when there is none.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    owner: Option<Uuid>,
) -> QueryResult<bool> {
    let n = match owner {
        Some(user_id) => {
            diesel::delete(
                dsl::api_keys
                    .filter(dsl::id.eq(id))
                    .filter(dsl::user_id.eq(user_id)),
            )
            .execute(conn)
            .await?
        }
        None => {
            diesel::delete(dsl::api_keys.filter(dsl::id.eq(id)))
                .execute(conn)
                .await?
        }
    };
    Ok(n > 0)
}

/// Deletes every key of the user (a password change or reset); how many there were.
pub async fn delete_all_owned(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<usize> {
    diesel::delete(dsl::api_keys.filter(dsl::user_id.eq(user_id)))
        .execute(conn)
        .await
}

/// The key with this hash and its owner (one indexed join).
pub async fn find_by_hash(
    conn: &mut AsyncPgConnection,
    secret_hash: &[u8],
) -> QueryResult<Option<KeyOwner>> {
    dsl::api_keys
        .inner_join(users::users)
        .filter(dsl::secret_hash.eq(secret_hash))
        .select((
            dsl::id,
            dsl::expires_at,
            dsl::scopes,
            dsl::last_used_at,
            users::id,
            users::username,
            users::role,
            users::disabled,
            users::token_version,
        ))
        .first(conn)
        .await
        .optional()
}

/// Records a use, unless one was recorded less than `every` ago (concurrent callers wait
/// on the row lock and then find it fresh, so a busy key costs one write per period).
pub async fn touch(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    now: DateTime<Utc>,
    every: chrono::Duration,
) -> QueryResult<()> {
    diesel::update(
        dsl::api_keys.filter(dsl::id.eq(id)).filter(
            dsl::last_used_at
                .is_null()
                .or(dsl::last_used_at.lt(now - every)),
        ),
    )
    .set(dsl::last_used_at.eq(now))
    .execute(conn)
    .await
    .map(|_| ())
}

/// A key as a turn's start finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    Valid,
    Expired,
    /// Revoked (revoking deletes the row).
    Gone,
}

impl KeyState {
    /// The state of a key from whether it is expired, as a turn's start reads it (`None`:
    /// no such key).
    pub fn from_expired(expired: Option<bool>) -> Self {
        match expired {
            None => Self::Gone,
            Some(true) => Self::Expired,
            Some(false) => Self::Valid,
        }
    }
}
