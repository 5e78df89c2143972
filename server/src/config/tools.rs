//! `[tools]`: the built-in tools' workspaces and HTTP fetching.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Settings of the built-in tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// A directory per user below this one holds the user's workspace files.
    pub workspace_dir: std::path::PathBuf,
    /// Per-user workspace limits.
    pub quota: crate::tools::Quota,
    /// `http_get` limits, domain allowlist, and the (test-only) private host:port escape hatch.
    pub http: crate::tools::HttpToolConfig,
    /// How much of an MCP server's tool list is read and offered to models.
    pub mcp: crate::tools::mcp::McpLimits,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            workspace_dir: std::path::PathBuf::from("data/workspaces"),
            quota: crate::tools::Quota::default(),
            http: crate::tools::HttpToolConfig::default(),
            mcp: crate::tools::mcp::McpLimits::default(),
        }
    }
}

impl ToolSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.workspace_dir.as_os_str().is_empty() {
            return Err(ConfigError::invalid(
                "tools.workspace_dir",
                "must not be empty",
            ));
        }
        if let Some((key, reason)) = self.mcp.invalid() {
            return Err(ConfigError::invalid(key, reason));
        }
        Ok(())
    }
}
