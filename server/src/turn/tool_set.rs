//! The registry a turn offers: the built-in tools, the tools of the MCP servers that are up
//! and the admin-defined HTTP tools. Built once and kept until the MCP tool lists or the
//! custom tool definitions change: every turn start reads the definitions, but rebuilding
//! the registry (a custom tool compiles its schema) on each one was measurable CPU.

use std::sync::{Arc, Mutex};

use crate::db::models::custom_tool::CustomToolRow;
use crate::tools::{custom_http, HttpToolConfig, Registry};

/// The last merged registry and what it was built from.
#[derive(Clone, Default)]
pub struct ToolSetCache {
    last: Arc<Mutex<Option<Merged>>>,
}

struct Merged {
    /// The MCP snapshot it includes (compared by identity: the manager replaces it on change).
    mcp: Registry,
    custom: Vec<CustomToolRow>,
    registry: Registry,
}

impl ToolSetCache {
    /// `builtin` + `mcp` + `custom`, from the cache when neither `mcp` nor `custom` changed.
    pub fn get(
        &self,
        builtin: &Registry,
        mcp: Registry,
        custom: &[CustomToolRow],
        http: &HttpToolConfig,
    ) -> Registry {
        if let Ok(last) = self.last.lock() {
            if let Some(m) = last.as_ref() {
                if m.mcp.same_as(&mcp) && m.custom == custom {
                    return m.registry.clone();
                }
            }
        }
        let registry = build(builtin, &mcp, custom, http);
        if let Ok(mut last) = self.last.lock() {
            *last = Some(Merged {
                mcp,
                custom: custom.to_vec(),
                registry: registry.clone(),
            });
        }
        registry
    }
}

/// Merges without the cache: the built-ins, then the admin's custom tools, then the MCP
/// tools, so that an MCP server can never take over a name already given (custom tool names
/// cannot hold the MCP separator `__` since they are checked at creation; older rows that
/// do still win over a listing). An invalid custom definition, or an MCP tool whose name is
/// taken, is skipped and logged rather than failing the turn.
fn build(
    builtin: &Registry,
    mcp: &Registry,
    custom: &[CustomToolRow],
    http: &HttpToolConfig,
) -> Registry {
    let mut registry = builtin.clone();
    for row in custom {
        let added = custom_http::CustomHttpTool::new(definition(row), http)
            .map_err(|e| e.to_string())
            .and_then(|t| registry.register(Arc::new(t)).map_err(|e| e.to_string()));
        if let Err(e) = added {
            tracing::warn!(tool = %row.name, error = %e, "skipping a custom tool");
        }
    }
    for clash in registry.merge(mcp) {
        tracing::warn!(tool = %clash, "an MCP tool has the name of a built-in or custom tool; skipped");
    }
    registry
}

fn definition(row: &CustomToolRow) -> custom_http::CustomToolDef {
    custom_http::CustomToolDef {
        name: row.name.clone(),
        description: row.description.clone(),
        parameters: row.parameters.clone(),
        method: row.method.clone(),
        url_template: row.url_template.clone(),
        headers: row
            .headers
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default(),
        timeout: std::time::Duration::from_millis(u64::try_from(row.timeout_ms).unwrap_or(10_000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, description: &str) -> CustomToolRow {
        CustomToolRow {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            method: "GET".into(),
            url_template: "https://example.com/x".into(),
            headers: serde_json::json!({}),
            timeout_ms: 1000,
            created_at: chrono::DateTime::UNIX_EPOCH,
            updated_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn kept_until_the_custom_tools_or_the_mcp_snapshot_change() {
        let cache = ToolSetCache::default();
        let builtin = Registry::new();
        let http = HttpToolConfig::default();
        let mcp = Registry::new();
        let a = cache.get(&builtin, mcp.clone(), &[row("a", "one")], &http);
        let again = cache.get(&builtin, mcp.clone(), &[row("a", "one")], &http);
        assert!(a.same_as(&again), "unchanged inputs reuse the registry");

        let edited = cache.get(&builtin, mcp.clone(), &[row("a", "two")], &http);
        assert!(!edited.same_as(&a));
        assert_eq!(edited.specs()[0].description, "two");

        let other_mcp = Registry::new();
        let rebuilt = cache.get(&builtin, other_mcp, &[row("a", "two")], &http);
        assert!(!rebuilt.same_as(&edited), "a new MCP snapshot rebuilds");
        assert_eq!(cache.get(&builtin, mcp, &[], &http).len(), 0);
    }
}
