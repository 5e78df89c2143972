//! The per-user storage quota of collections: the bytes of the files a user uploaded (the
//! current version of each; older versions are not kept), over every collection.

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

/// What a user has stored and may store, as the collections list shows it.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Storage {
    pub used_bytes: i64,
    /// 0: no limit.
    pub limit_bytes: i64,
}

#[derive(QueryableByName)]
struct Used {
    #[diesel(sql_type = BigInt)]
    used: i64,
}

const USED: &str = "SELECT COALESCE(sum(bytes), 0)::BIGINT AS used FROM documents \
                     WHERE uploaded_by = $1";

/// The bytes `user` has stored now.
pub async fn used(conn: &mut AsyncPgConnection, user: Uuid) -> diesel::QueryResult<i64> {
    let u: Used = diesel::sql_query(USED)
        .bind::<SqlUuid, _>(user)
        .get_result(conn)
        .await?;
    Ok(u.used)
}

/// Inside a transaction: takes the user's quota lock (held to its end, so two adds of one
/// user are counted one after the other), then the bytes they store, leaving out the file
/// `replacing` (a collection and a name) a new version would replace.
pub(super) async fn lock_and_use(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    replacing: Option<(Uuid, &str)>,
) -> diesel::QueryResult<i64> {
    diesel::sql_query(
        "SELECT pg_advisory_xact_lock(hashtextextended('knowledge-quota:' || $1, 0))",
    )
    .bind::<Text, _>(user.to_string())
    .execute(conn)
    .await?;
    let (collection, name) = replacing.unwrap_or((Uuid::nil(), ""));
    let u: Used = diesel::sql_query(format!(
        "{USED} AND NOT (collection_id = $2 AND lower(name) = lower($3))"
    ))
    .bind::<SqlUuid, _>(user)
    .bind::<SqlUuid, _>(collection)
    .bind::<Text, _>(name)
    .get_result(conn)
    .await?;
    Ok(u.used)
}
