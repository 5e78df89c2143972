//! Assistants in Postgres: each save is a row of `assistant_versions`, and `assistants`
//! points at the current one. Retiring keeps every version (the trail) and the chats.

use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::sql_types::{Array, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, QueryableByName};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::spec::{AssistantParams, AssistantSpec};
use crate::db::schema::assistants;

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

// Kept as SQL: one join text shared by the five readers below (the turn's among them),
// read by name into `Assistant`, whose `lower(name)` filters and order the DSL would only
// spell as `sql` fragments.
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
    let n: Option<(String, bool)> = assistants::table
        .find(id)
        .select((assistants::name, assistants::retired_at.is_not_null()))
        .get_result(conn)
        .await
        .optional()?;
    Ok(n.map(|(name, retired)| (id, name, retired)))
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
            diesel::insert_into(assistants::table)
                .values((
                    assistants::id.eq(id),
                    assistants::name.eq(&spec.name),
                    assistants::created_by.eq(by.id),
                ))
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
            let next: Option<i32> = diesel::update(
                assistants::table
                    .find(id)
                    .filter(assistants::retired_at.is_null()),
            )
            .set((
                assistants::version.eq(assistants::version + 1),
                assistants::name.eq(&spec.name),
                assistants::updated_at.eq(now),
            ))
            .returning(assistants::version)
            .get_result(conn)
            .await
            .optional()?;
            let next = next.ok_or(SaveError::NotFound)?;
            insert_version(conn, id, next, spec, by).await?;
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
    use crate::db::schema::assistant_versions as v;
    let params = serde_json::to_value(&spec.params).unwrap_or_default();
    diesel::insert_into(v::table)
        .values((
            v::assistant_id.eq(id),
            v::version.eq(version),
            v::name.eq(&spec.name),
            v::description.eq(crate::db::pg_safe_text(&spec.description).into_owned()),
            v::instructions.eq(crate::db::pg_safe_text(&spec.instructions).into_owned()),
            v::model.eq(spec.model.as_deref()),
            v::tools.eq(&spec.tools),
            v::collections.eq(&spec.collections),
            v::params.eq(params),
            v::visible_to_roles.eq(&spec.visible_to_roles),
            v::created_by.eq(by.id),
            v::created_by_name.eq(by.name),
        ))
        .execute(conn)
        .await
}

/// Retires a live assistant; `false` when there was none.
pub async fn retire(conn: &mut AsyncPgConnection, id: Uuid) -> diesel::QueryResult<bool> {
    let n = diesel::update(
        assistants::table
            .find(id)
            .filter(assistants::retired_at.is_null()),
    )
    .set((
        assistants::retired_at.eq(now),
        assistants::updated_at.eq(now),
    ))
    .execute(conn)
    .await?;
    Ok(n > 0)
}
