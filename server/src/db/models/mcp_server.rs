//! Streamable HTTP MCP servers added through the admin API.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::mcp_servers::{self, dsl};
use crate::tools::mcp::McpServerConfig;

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

impl McpServerRow {
    /// The definition the manager runs.
    pub fn to_config(&self) -> McpServerConfig {
        let mut c = McpServerConfig::http(&self.name, &self.url);
        c.headers = self
            .headers
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default();
        c.enabled = self.enabled;
        c.timeout_ms = u64::try_from(self.timeout_ms).unwrap_or(1);
        c.forward_identity = self.forward_identity;
        c
    }

    /// A row for `config` (an HTTP server).
    pub fn from_config(config: &McpServerConfig) -> Self {
        Self {
            name: config.name.clone(),
            url: config.url.clone().unwrap_or_default(),
            headers: serde_json::to_value(&config.headers).unwrap_or_default(),
            enabled: config.enabled,
            timeout_ms: i64::try_from(config.timeout_ms).unwrap_or(i64::MAX),
            forward_identity: config.forward_identity,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }
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
