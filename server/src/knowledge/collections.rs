//! Collections: who reads one (its owner, and the roles an admin shared it with), who may
//! change it (its owner; an admin, any). An admin sees every
//! collection's metadata (to share it), but reads its content only through a grant like
//! anyone else. Every statement names the caller, so one outside their reach is "not found".

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Bool, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::KnowledgeError;

/// Who is asking.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: Uuid,
    pub admin: bool,
}

/// The SQL test "the user `$1` may read collection `c`": owner, or a role it was shared
/// with. Written once, used by every statement here and by search.
pub(crate) const READABLE_BY_1: &str =
    "(c.owner_id = $1 OR EXISTS (SELECT 1 FROM collection_grants g \
     JOIN users u ON u.role = g.role WHERE g.collection_id = c.id AND u.id = $1))";

/// A collection as the API shows it.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct CollectionView {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub description: String,
    #[serde(skip)]
    #[diesel(sql_type = SqlUuid)]
    pub owner_id: Uuid,
    #[serde(skip)]
    #[diesel(sql_type = Text)]
    pub owner_name: String,
    #[diesel(sql_type = Array<Text>)]
    pub roles: Vec<String>,
    #[diesel(sql_type = BigInt)]
    pub documents: i64,
    #[diesel(sql_type = BigInt)]
    pub chunks: i64,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
    /// Whether the caller may read its content (false: an admin seeing metadata only).
    #[diesel(sql_type = Bool)]
    pub readable: bool,
}

/// Whose a collection is.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Owner {
    pub id: Uuid,
    pub username: String,
}

/// The view with what the caller may do with it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Collection {
    #[serde(flatten)]
    pub view: CollectionView,
    pub owner: Owner,
    pub mine: bool,
    pub can_manage: bool,
}

impl Collection {
    fn of(view: CollectionView, caller: &Caller) -> Self {
        let mine = view.owner_id == caller.id;
        Self {
            owner: Owner {
                id: view.owner_id,
                username: view.owner_name.clone(),
            },
            mine,
            can_manage: mine || caller.admin,
            view,
        }
    }
}

/// The view's SELECT; `$1` is the caller.
fn select_view() -> String {
    format!(
        "SELECT c.id, c.name, c.description, c.owner_id, u.username AS owner_name, \
        COALESCE((SELECT array_agg(g.role ORDER BY g.role) FROM collection_grants g \
                  WHERE g.collection_id = c.id), '{{}}') AS roles, \
        (SELECT count(*) FROM documents d WHERE d.collection_id = c.id) AS documents, \
        COALESCE((SELECT sum(d.chunk_count) FROM documents d WHERE d.collection_id = c.id), 0)::BIGINT AS chunks, \
        c.created_at, c.updated_at, {READABLE_BY_1} AS readable \
   FROM collections c JOIN users u ON u.id = c.owner_id"
    )
}

/// The collections the caller may read, newest first; with `all`, an admin's list holds
/// every collection (metadata: `readable` says which ones they may also search).
pub async fn list(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    all: bool,
) -> Result<Vec<Collection>, KnowledgeError> {
    let rows: Vec<CollectionView> = diesel::sql_query(format!(
        "{} WHERE ($2 OR {READABLE_BY_1}) ORDER BY c.created_at DESC LIMIT 500",
        select_view()
    ))
    .bind::<SqlUuid, _>(caller.id)
    .bind::<Bool, _>(all && caller.admin)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|v| Collection::of(v, caller))
        .collect())
}

/// One collection the caller may read (its content: files, passages, search, pins).
pub async fn get(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<Collection, KnowledgeError> {
    lookup(conn, caller, id, false).await
}

/// One collection's metadata: one the caller may read, or, for an admin, any.
pub async fn metadata(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<Collection, KnowledgeError> {
    lookup(conn, caller, id, caller.admin).await
}

async fn lookup(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
    any: bool,
) -> Result<Collection, KnowledgeError> {
    let row: Option<CollectionView> = diesel::sql_query(format!(
        "{} WHERE ($3 OR {READABLE_BY_1}) AND c.id = $2",
        select_view()
    ))
    .bind::<SqlUuid, _>(caller.id)
    .bind::<SqlUuid, _>(id)
    .bind::<Bool, _>(any)
    .get_result(conn)
    .await
    .optional()?;
    row.map(|v| Collection::of(v, caller))
        .ok_or(KnowledgeError::CollectionNotFound)
}

/// One whose files the caller may change (its owner, or an admin who may read it).
pub async fn managed(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<Collection, KnowledgeError> {
    let c = get(conn, caller, id).await?;
    must_manage(c)
}

/// One whose name, description, grants or existence the caller may change (its owner, or
/// any admin: a collection a member built is shared by an admin).
pub async fn governed(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<Collection, KnowledgeError> {
    let c = metadata(conn, caller, id).await?;
    must_manage(c)
}

fn must_manage(c: Collection) -> Result<Collection, KnowledgeError> {
    if !c.can_manage {
        return Err(KnowledgeError::Forbidden(
            "only the collection's owner or an admin may change it",
        ));
    }
    Ok(c)
}

fn check_text(name: &str, description: &str) -> Result<(), KnowledgeError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(KnowledgeError::Invalid(
            "a collection needs a name of 1-100 characters, without control characters".into(),
        ));
    }
    if description.chars().count() > 2000 {
        return Err(KnowledgeError::Invalid(
            "a description may have at most 2000 characters".into(),
        ));
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// A new personal collection of the caller's.
pub async fn create(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    name: &str,
    description: &str,
    max_per_user: i64,
) -> Result<Collection, KnowledgeError> {
    check_text(name, description)?;
    let owned: Count =
        diesel::sql_query("SELECT count(*) AS n FROM collections WHERE owner_id = $1")
            .bind::<SqlUuid, _>(caller.id)
            .get_result(conn)
            .await?;
    if owned.n >= max_per_user {
        return Err(KnowledgeError::Limit(format!(
            "you already own {} collections, the most one may",
            owned.n
        )));
    }
    let id = Uuid::new_v4();
    let inserted = diesel::sql_query(
        "INSERT INTO collections (id, owner_id, name, description) VALUES ($1, $2, $3, $4) \
         ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(caller.id)
    .bind::<Text, _>(name.trim())
    .bind::<Text, _>(description)
    .execute(conn)
    .await?;
    if inserted == 0 {
        return Err(KnowledgeError::CollectionExists(name.trim().to_owned()));
    }
    get(conn, caller, id).await
}

/// Renames or re-describes one the caller manages.
pub async fn update(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
    name: Option<&str>,
    description: Option<&str>,
) -> Result<Collection, KnowledgeError> {
    let current = governed(conn, caller, id).await?;
    let name = name.unwrap_or(&current.view.name);
    let description = description.unwrap_or(&current.view.description);
    check_text(name, description)?;
    let updated = diesel::sql_query(
        "UPDATE collections SET name = $2, description = $3, updated_at = now() WHERE id = $1",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(name.trim())
    .bind::<Text, _>(description)
    .execute(conn)
    .await;
    match updated {
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Err(KnowledgeError::CollectionExists(name.trim().to_owned())),
        other => {
            other?;
            metadata(conn, caller, id).await
        }
    }
}

/// Deletes one the caller manages, with its files and chunks.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<(), KnowledgeError> {
    governed(conn, caller, id).await?;
    diesel::sql_query("DELETE FROM collections WHERE id = $1")
        .bind::<SqlUuid, _>(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Shares any collection with exactly `roles` (none: personal again); admins only.
pub async fn set_grants(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
    roles: &[String],
) -> Result<Collection, KnowledgeError> {
    if !caller.admin {
        return Err(KnowledgeError::Forbidden(
            "only an admin may share a collection with roles",
        ));
    }
    metadata(conn, caller, id).await?;
    if roles.len() > 100 {
        return Err(KnowledgeError::Invalid("at most 100 roles".into()));
    }
    let known: Count = diesel::sql_query("SELECT count(*) AS n FROM roles WHERE name = ANY($1)")
        .bind::<Array<Text>, _>(roles)
        .get_result(conn)
        .await?;
    let mut distinct = roles.to_vec();
    distinct.sort();
    distinct.dedup();
    if known.n != i64::try_from(distinct.len()).unwrap_or(i64::MAX) {
        return Err(KnowledgeError::Invalid(
            "every role must exist (see the roles page)".into(),
        ));
    }
    diesel::sql_query(
        "WITH gone AS (DELETE FROM collection_grants WHERE collection_id = $1 \
                       AND NOT (role = ANY($2))) \
         INSERT INTO collection_grants (collection_id, role) \
         SELECT $1, r FROM unnest($2::text[]) r ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Array<Text>, _>(&distinct)
    .execute(conn)
    .await?;
    metadata(conn, caller, id).await
}
