//! The tool names an allowlist may use: a role's and an assistant's lists are checked the
//! same way.

use diesel_async::AsyncPgConnection;

use crate::error::ApiError;
use crate::state::AppState;

/// Built-in, custom and MCP tools as they are now.
pub struct KnownTools {
    names: Vec<String>,
    /// Configured MCP servers (up or not).
    pub mcp: Vec<String>,
}

impl KnownTools {
    pub async fn load(state: &AppState, conn: &mut AsyncPgConnection) -> Result<Self, ApiError> {
        let custom = crate::db::models::custom_tool::list(conn).await?;
        let mut names: Vec<String> = state.tools.specs().into_iter().map(|s| s.name).collect();
        names.extend(custom.into_iter().map(|c| c.name));
        Ok(Self {
            names,
            mcp: state.mcp.names(),
        })
    }

    /// Whether `t` names a tool. An MCP tool or `{server}__*` is accepted for any
    /// configured server, even one that is down right now (its tools come back with it).
    pub fn knows(&self, t: &str) -> bool {
        self.names.iter().any(|n| n == t)
            || self.mcp.iter().any(|server| {
                t.strip_prefix(server.as_str())
                    .is_some_and(|rest| rest.starts_with("__") && rest.len() > 2)
            })
    }

    /// 422 `unknown_tool` for the first entry of `tools` that names no tool.
    pub fn check(&self, tools: &[String]) -> Result<(), ApiError> {
        match tools.iter().find(|t| !self.knows(t)) {
            Some(unknown) => Err(ApiError::unprocessable(
                "unknown_tool",
                format!(
                    "no tool named `{}`; see GET /api/admin/tools",
                    crate::tools::truncate_chars(unknown, 64)
                ),
            )),
            None => Ok(()),
        }
    }
}
