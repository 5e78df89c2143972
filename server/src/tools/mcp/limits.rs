//! `[tools.mcp]`: how much of an MCP server's tool list is read and offered. A hostile or
//! broken listing (endless pages, 40,000 tools, megabyte descriptions) must cost bounded
//! memory and bounded model input: past a limit the rest is left out and the server is
//! shown `degraded` with the reason, never an out-of-memory.

/// Limits on reading and offering MCP tool lists.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpLimits {
    /// Most `tools/list` pages read per listing.
    pub max_list_pages: usize,
    /// Most tools kept per server; later ones are left out.
    pub max_tools_per_server: usize,
    /// Longest tool description kept, in bytes; longer ones are cut.
    pub max_description_bytes: usize,
    /// Largest parameter schema accepted, in bytes (serialised); a tool with a larger one
    /// is left out.
    pub max_schema_bytes: usize,
    /// Most bytes of MCP tool definitions (name, description, schema) offered to a model in
    /// one request, all servers together, in server name order.
    pub max_offered_bytes: usize,
    /// Largest single message read from a Streamable HTTP server (JSON body or SSE event).
    pub max_message_bytes: usize,
}

impl Default for McpLimits {
    fn default() -> Self {
        Self {
            max_list_pages: 16,
            max_tools_per_server: 128,
            max_description_bytes: 4096,
            max_schema_bytes: 16 * 1024,
            max_offered_bytes: 256 * 1024,
            max_message_bytes: 4 * 1024 * 1024,
        }
    }
}

impl McpLimits {
    /// The first setting out of range, and why.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        let checks = [
            (self.max_list_pages, 1, "tools.mcp.max_list_pages"),
            (
                self.max_tools_per_server,
                1,
                "tools.mcp.max_tools_per_server",
            ),
            (
                self.max_description_bytes,
                64,
                "tools.mcp.max_description_bytes",
            ),
            (self.max_schema_bytes, 256, "tools.mcp.max_schema_bytes"),
            (self.max_offered_bytes, 1024, "tools.mcp.max_offered_bytes"),
            (
                self.max_message_bytes,
                65_536,
                "tools.mcp.max_message_bytes",
            ),
        ];
        checks
            .into_iter()
            .find(|(value, least, _)| value < least)
            .map(|(_, least, key)| (key, format!("must be at least {least}")))
    }
}
