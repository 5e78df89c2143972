//! An admin-API MCP server as its row in `mcp_servers` holds it, and back: the storage
//! knows rows, the manager runs configs.

use std::collections::BTreeMap;

use chrono::Utc;

use crate::db::models::mcp_server::McpServerRow;
use crate::tools::mcp::McpServerConfig;

/// The definition the manager runs.
pub fn config_of(row: &McpServerRow) -> McpServerConfig {
    let mut c = McpServerConfig::http(&row.name, &row.url);
    c.headers = row
        .headers
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect::<BTreeMap<_, _>>()
        })
        .unwrap_or_default();
    c.enabled = row.enabled;
    c.timeout_ms = u64::try_from(row.timeout_ms).unwrap_or(1);
    c.forward_identity = row.forward_identity;
    c
}

/// A row for `config` (an HTTP server).
pub fn row_of(config: &McpServerConfig) -> McpServerRow {
    McpServerRow {
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
