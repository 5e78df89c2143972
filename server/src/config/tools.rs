//! `[tools]`: the built-in tools' workspaces and HTTP fetching.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Settings of the built-in tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// A directory per user below this one holds the user's workspace files.
    pub workspace_dir: PathBuf,
    /// Per-user workspace limits.
    pub quota: crate::files::Quota,
    /// `http_get` limits, domain allowlist, and the (test-only) private host:port escape hatch.
    pub http: crate::tools::HttpToolConfig,
    /// How much of an MCP server's tool list is read and offered to models.
    pub mcp: crate::tools::mcp::McpLimits,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            workspace_dir: default_workspace_dir(),
            quota: crate::files::Quota::default(),
            http: crate::tools::HttpToolConfig::default(),
            mcp: crate::tools::mcp::McpLimits::default(),
        }
    }
}

/// Where users' files live unless `tools.workspace_dir` says otherwise: a stable place, never
/// relative to the directory the server happened to start in (a second start elsewhere
/// would show everyone an empty workspace).
pub fn default_workspace_dir() -> PathBuf {
    standard_workspace_dir(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

/// `$XDG_DATA_HOME/agentchat/workspaces`, else `$HOME/.local/share/agentchat/workspaces`,
/// else (a service account without a home) `/var/lib/agentchat/workspaces`. A relative
/// value of either variable is ignored, as the XDG specification says.
fn standard_workspace_dir(xdg_data_home: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(data) = absolute(xdg_data_home) {
        data.join("agentchat/workspaces")
    } else if let Some(home) = absolute(home) {
        home.join(".local/share/agentchat/workspaces")
    } else {
        PathBuf::from("/var/lib/agentchat/workspaces")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_workspace_is_the_users_data_directory() {
        let at = |x: Option<&str>, h: Option<&str>| {
            standard_workspace_dir(x.map(OsString::from), h.map(OsString::from))
        };
        assert_eq!(
            at(Some("/data"), Some("/home/a")),
            PathBuf::from("/data/agentchat/workspaces")
        );
        assert_eq!(
            at(Some("rel"), Some("/home/a")),
            PathBuf::from("/home/a/.local/share/agentchat/workspaces")
        );
        assert_eq!(
            at(None, None),
            PathBuf::from("/var/lib/agentchat/workspaces")
        );
        assert!(default_workspace_dir().is_absolute());
    }
}
