//! Admin-defined HTTP tools.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use serde::{Deserialize, Serialize};

use crate::db::schema::custom_tools::{self, dsl};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Serialize, Deserialize)]
#[diesel(table_name = custom_tools)]
pub struct CustomToolRow {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
    pub method: String,
    pub url_template: String,
    /// Secret values; the API shows only the names.
    #[serde(skip_serializing)]
    pub headers: serde_json::Value,
    pub timeout_ms: i64,
    #[diesel(skip_insertion)]
    pub created_at: DateTime<Utc>,
    #[diesel(skip_insertion)]
    pub updated_at: DateTime<Utc>,
}

/// All definitions by name; the future does not borrow the connection (pipelinable).
pub fn list(conn: &mut AsyncPgConnection) -> BoxFuture<'static, QueryResult<Vec<CustomToolRow>>> {
    dsl::custom_tools
        .order(dsl::name.asc())
        .select(CustomToolRow::as_select())
        .load(conn)
        .boxed()
}

pub async fn find(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Option<CustomToolRow>> {
    dsl::custom_tools
        .find(name)
        .select(CustomToolRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// Creates or replaces the tool named `row.name`.
pub async fn upsert(
    conn: &mut AsyncPgConnection,
    row: &CustomToolRow,
) -> QueryResult<CustomToolRow> {
    diesel::insert_into(dsl::custom_tools)
        .values(row)
        .on_conflict(dsl::name)
        .do_update()
        .set((
            dsl::description.eq(&row.description),
            dsl::parameters.eq(&row.parameters),
            dsl::method.eq(&row.method),
            dsl::url_template.eq(&row.url_template),
            dsl::headers.eq(&row.headers),
            dsl::timeout_ms.eq(row.timeout_ms),
            dsl::updated_at.eq(diesel::dsl::now),
        ))
        .returning(CustomToolRow::as_returning())
        .get_result(conn)
        .await
}

pub async fn delete(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<bool> {
    let n = diesel::delete(dsl::custom_tools.find(name))
        .execute(conn)
        .await?;
    Ok(n > 0)
}
