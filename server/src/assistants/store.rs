//! Assistants in Postgres: each save is a row of `assistant_versions`, and `assistants`
//! points at the current one. Retiring keeps every version (the trail) and the chats.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::spec::{AssistantParams, AssistantSpec};

/// An assistant at its current version.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct Assistant {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub description: String,
    #[diesel(sql_type = Int4)]
    pub version: i32,
    #[diesel(sql_type = Text)]
    pub instructions: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub model: Option<String>,
    #[diesel(sql_type = Array<Text>)]
    pub tools: Vec<String>,
    #[diesel(sql_type = Array<SqlUuid>)]
    pub collections: Vec<Uuid>,
    #[diesel(sql_type = Jsonb)]
    #[schema(value_type = AssistantParams)]
    pub params: serde_json::Value,
    #[diesel(sql_type = Array<Text>)]
    pub visible_to_roles: Vec<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

impl Assistant {
    /// The preset's sampling parameters (unreadable stored ones count as none).
    pub fn params(&self) -> AssistantParams {
        serde_json::from_value(self.params.clone()).unwrap_or_default()
    }

    /// Whether a user of `role` sees it.
    pub fn visible_to(&self, role: &str) -> bool {
        self.visible_to_roles.is_empty() || self.visible_to_roles.iter().any(|r| r == role)
    }
}

/// One saved version, as the trail shows it.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct AssistantVersion {
    #[diesel(sql_type = Int4)]
    pub version: i32,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub description: String,
    #[diesel(sql_type = Text)]
    pub instructions: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub model: Option<String>,
    #[diesel(sql_type = Array<Text>)]
    pub tools: Vec<String>,
    #[diesel(sql_type = Array<SqlUuid>)]
    pub collections: Vec<Uuid>,
    #[diesel(sql_type = Jsonb)]
    #[schema(value_type = AssistantParams)]
    pub params: serde_json::Value,
    #[diesel(sql_type = Array<Text>)]
    pub visible_to_roles: Vec<String>,
    #[diesel(sql_type = Text)]
    pub created_by: String,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
}

/// Why a save did not happen.
#[derive(Debug)]
pub enum SaveError {
    /// Another live assistant has the name.
    NameTaken,
    /// No live assistant has the id.
    NotFound,
    Db(diesel::result::Error),
}

impl From<diesel::result::Error> for SaveError {
    fn from(e: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error};
        match e {
            Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => Self::NameTaken,
            other => Self::Db(other),
        }
    }
}

const SELECT_CURRENT: &str = "SELECT a.id, v.name, v.description, a.version, v.instructions, \
        v.model, v.tools, v.collections, v.params, v.visible_to_roles, a.created_at, \
        a.updated_at \
   FROM assistants a \
   JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version \
  WHERE a.retired_at IS NULL";

/// Every live assistant, by name.
pub async fn list(conn: &mut AsyncPgConnection) -> diesel::QueryResult<Vec<Assistant>> {
    diesel::sql_query(format!("{SELECT_CURRENT} ORDER BY lower(v.name) LIMIT 500"))
        .load(conn)
        .await
}

/// The live assistants a user of `role` sees.
pub async fn visible_to(
    conn: &mut AsyncPgConnection,
    role: &str,
) -> diesel::QueryResult<Vec<Assistant>> {
    diesel::sql_query(format!(
        "{SELECT_CURRENT} AND (cardinality(v.visible_to_roles) = 0 \
                               OR $1 = ANY(v.visible_to_roles)) \
          ORDER BY lower(v.name) LIMIT 500"
    ))
    .bind::<Text, _>(role)
    .load(conn)
    .await
}

/// A live assistant by id.
pub async fn get(conn: &mut AsyncPgConnection, id: Uuid) -> diesel::QueryResult<Option<Assistant>> {
    diesel::sql_query(format!("{SELECT_CURRENT} AND a.id = $1"))
        .bind::<SqlUuid, _>(id)
        .get_result(conn)
        .await
        .optional()
}

/// A live assistant by name (any case).
pub async fn by_name(
    conn: &mut AsyncPgConnection,
    name: &str,
) -> diesel::QueryResult<Option<Assistant>> {
    diesel::sql_query(format!("{SELECT_CURRENT} AND lower(a.name) = lower($1)"))
        .bind::<Text, _>(name)
        .get_result(conn)
        .await
        .optional()
}

/// A live assistant by its `/v1` name ([`crate::assistants::spec::api_name`], any case):
/// its spaces written as `-`.
pub async fn by_api_name(
    conn: &mut AsyncPgConnection,
    name: &str,
) -> diesel::QueryResult<Option<Assistant>> {
    diesel::sql_query(format!(
        "{SELECT_CURRENT} AND lower(replace(a.name, ' ', '-')) = lower($1) \
          ORDER BY lower(a.name) LIMIT 1"
    ))
    .bind::<Text, _>(name)
    .get_result(conn)
    .await
    .optional()
}

/// An assistant's current name and whether it is retired (retired ones too).
pub async fn name_of(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> diesel::QueryResult<Option<(Uuid, String, bool)>> {
    #[derive(QueryableByName)]
    struct Named {
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        retired: bool,
    }
    let n: Option<Named> = diesel::sql_query(
        "SELECT name, retired_at IS NOT NULL AS retired FROM assistants WHERE id = $1",
    )
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await
    .optional()?;
    Ok(n.map(|n| (id, n.name, n.retired)))
}

/// Every version of an assistant (retired ones too), newest first.
pub async fn versions(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> diesel::QueryResult<Vec<AssistantVersion>> {
    diesel::sql_query(
        "SELECT version, name, description, instructions, model, tools, collections, params, \
                visible_to_roles, created_by_name AS created_by, created_at \
           FROM assistant_versions WHERE assistant_id = $1 ORDER BY version DESC LIMIT 1000",
    )
    .bind::<SqlUuid, _>(id)
    .load(conn)
    .await
}

/// Who saves a version.
pub struct Author<'a> {
    pub id: Uuid,
    pub name: &'a str,
}

/// Stores `spec` as a new assistant (version 1).
pub async fn create(
    conn: &mut AsyncPgConnection,
    spec: &AssistantSpec,
    by: &Author<'_>,
) -> Result<Assistant, SaveError> {
    let id = Uuid::new_v4();
    conn.transaction::<_, SaveError, _>(|conn| {
        async move {
            diesel::sql_query("INSERT INTO assistants (id, name, created_by) VALUES ($1, $2, $3)")
                .bind::<SqlUuid, _>(id)
                .bind::<Text, _>(&spec.name)
                .bind::<SqlUuid, _>(by.id)
                .execute(conn)
                .await?;
            insert_version(conn, id, 1, spec, by).await?;
            get(conn, id).await?.ok_or(SaveError::NotFound)
        }
        .scope_boxed()
    })
    .await
}

/// Saves `spec` as the next version of the live assistant `id`.
pub async fn update(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    spec: &AssistantSpec,
    by: &Author<'_>,
) -> Result<Assistant, SaveError> {
    conn.transaction::<_, SaveError, _>(|conn| {
        async move {
            #[derive(QueryableByName)]
            struct Next {
                #[diesel(sql_type = Int4)]
                version: i32,
            }
            let next: Option<Next> = diesel::sql_query(
                "UPDATE assistants SET version = version + 1, name = $2, updated_at = now() \
                  WHERE id = $1 AND retired_at IS NULL RETURNING version",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(&spec.name)
            .get_result(conn)
            .await
            .optional()?;
            let next = next.ok_or(SaveError::NotFound)?;
            insert_version(conn, id, next.version, spec, by).await?;
            get(conn, id).await?.ok_or(SaveError::NotFound)
        }
        .scope_boxed()
    })
    .await
}

async fn insert_version(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    version: i32,
    spec: &AssistantSpec,
    by: &Author<'_>,
) -> diesel::QueryResult<usize> {
    let params = serde_json::to_value(&spec.params).unwrap_or_default();
    diesel::sql_query(
        "INSERT INTO assistant_versions (assistant_id, version, name, description, \
            instructions, model, tools, collections, params, visible_to_roles, created_by, \
            created_by_name) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Int4, _>(version)
    .bind::<Text, _>(&spec.name)
    .bind::<Text, _>(crate::db::pg_safe_text(&spec.description).into_owned())
    .bind::<Text, _>(crate::db::pg_safe_text(&spec.instructions).into_owned())
    .bind::<Nullable<Text>, _>(spec.model.as_deref())
    .bind::<Array<Text>, _>(&spec.tools)
    .bind::<Array<SqlUuid>, _>(&spec.collections)
    .bind::<Jsonb, _>(params)
    .bind::<Array<Text>, _>(&spec.visible_to_roles)
    .bind::<SqlUuid, _>(by.id)
    .bind::<Text, _>(by.name)
    .execute(conn)
    .await
}

/// Retires a live assistant; `false` when there was none.
pub async fn retire(conn: &mut AsyncPgConnection, id: Uuid) -> diesel::QueryResult<bool> {
    let n = diesel::sql_query(
        "UPDATE assistants SET retired_at = now(), updated_at = now() \
          WHERE id = $1 AND retired_at IS NULL",
    )
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await?;
    Ok(n > 0)
}
