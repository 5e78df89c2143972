//! Streamable HTTP MCP servers added through the admin API.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::mcp_servers::{self, dsl};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = mcp_servers)]
pub struct McpServerRow {
    pub name: String,
    pub url: String,
    /// Secret values; the API shows only the names.
    pub headers: serde_json::Value,
    pub enabled: bool,
    pub timeout_ms: i64,
    pub forward_identity: bool,
    #[diesel(skip_insertion)]
    pub created_at: DateTime<Utc>,
    #[diesel(skip_insertion)]
    pub updated_at: DateTime<Utc>,
}

pub async fn list(conn: &mut AsyncPgConnection) -> QueryResult<Vec<McpServerRow>> {
    dsl::mcp_servers
        .order(dsl::name.asc())
        .select(McpServerRow::as_select())
        .load(conn)
        .await
}

pub async fn find(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Option<McpServerRow>> {
    dsl::mcp_servers
        .find(name)
        .select(McpServerRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// Inserts `row`; `false` if the name is taken.
pub async fn insert(conn: &mut AsyncPgConnection, row: &McpServerRow) -> QueryResult<bool> {
    let n = diesel::insert_into(dsl::mcp_servers)
        .values(row)
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(n > 0)
}

/// Replaces the server named `row.name`; `false` if there is none.
pub async fn update(conn: &mut AsyncPgConnection, row: &McpServerRow) -> QueryResult<bool> {
    let n = diesel::update(dsl::mcp_servers.find(&row.name))
        .set((
            dsl::url.eq(&row.url),
            dsl::headers.eq(&row.headers),
            dsl::enabled.eq(row.enabled),
            dsl::timeout_ms.eq(row.timeout_ms),
            dsl::forward_identity.eq(row.forward_identity),
            dsl::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    Ok(n > 0)
}

pub async fn delete(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<bool> {
    let n = diesel::delete(dsl::mcp_servers.find(name))
        .execute(conn)
        .await?;
    Ok(n > 0)
}
