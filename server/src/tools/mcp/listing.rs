//! Reading a server's tool list within [`McpLimits`]: page by page, keeping at most
//! `max_tools_per_server` tools with descriptions and schemas within their sizes. What is
//! left out is named in notes, which show the server `degraded` in the admin view.

use rmcp::model::{PaginatedRequestParams, Tool as RemoteTool};
use rmcp::service::{Peer, ServiceError};
use rmcp::RoleClient;
use serde_json::Value;

use super::limits::McpLimits;
use super::server_state::ToolInfo;
use super::tool::full_name;
use crate::tools::truncate_chars;

/// The tools kept, and what was left out (empty: everything listed is offered).
#[derive(Debug, Default)]
pub(super) struct Listing {
    pub(super) tools: Vec<ToolInfo>,
    pub(super) notes: Vec<String>,
}

/// Lists the server's tools, at most `max_list_pages` pages.
pub(super) async fn list_bounded(
    peer: &Peer<RoleClient>,
    server: &str,
    limits: &McpLimits,
) -> Result<Listing, ServiceError> {
    let mut keep = Keeper::new(server, limits);
    let mut cursor = None;
    for _ in 0..limits.max_list_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        for tool in page.tools {
            keep.offer(tool);
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(keep.finish());
        }
    }
    let mut listing = keep.finish();
    listing.notes.insert(
        0,
        format!(
            "the tool list has more than {} pages (tools.mcp.max_list_pages); later pages were not read",
            limits.max_list_pages
        ),
    );
    Ok(listing)
}

/// Applies the per-tool limits as tools arrive, counting what it leaves out.
struct Keeper<'a> {
    server: &'a str,
    limits: &'a McpLimits,
    tools: Vec<ToolInfo>,
    over_count: usize,
    schema_too_large: usize,
    /// The first few of them, named in the note.
    schema_too_large_names: Vec<String>,
    descriptions_cut: usize,
    bad_names: usize,
}

impl<'a> Keeper<'a> {
    fn new(server: &'a str, limits: &'a McpLimits) -> Self {
        Self {
            server,
            limits,
            tools: Vec::new(),
            over_count: 0,
            schema_too_large: 0,
            schema_too_large_names: Vec::new(),
            descriptions_cut: 0,
            bad_names: 0,
        }
    }

    fn offer(&mut self, t: RemoteTool) {
        if self.tools.len() >= self.limits.max_tools_per_server {
            self.over_count += 1;
            return;
        }
        let Some(name) = full_name(self.server, &t.name) else {
            self.bad_names += 1;
            return;
        };
        let parameters = Value::Object((*t.input_schema).clone());
        if parameters.to_string().len() > self.limits.max_schema_bytes {
            self.schema_too_large += 1;
            if self.schema_too_large_names.len() < 5 {
                self.schema_too_large_names
                    .push(truncate_chars(&t.name, 64));
            }
            return;
        }
        let full = t
            .description
            .as_deref()
            .or(t.title.as_deref())
            .unwrap_or("");
        let description = cut_to_bytes(full, self.limits.max_description_bytes);
        if description.len() < full.len() {
            self.descriptions_cut += 1;
        }
        let annotations = t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok())
            .unwrap_or_else(|| Value::Object(Default::default()));
        self.tools.push(ToolInfo {
            name,
            remote_name: t.name.to_string(),
            description: description.to_owned(),
            annotations,
            parameters,
        });
    }

    fn finish(self) -> Listing {
        let l = self.limits;
        let mut notes = Vec::new();
        if self.over_count > 0 {
            notes.push(format!(
                "{} more tools than tools.mcp.max_tools_per_server ({}) were left out",
                self.over_count, l.max_tools_per_server
            ));
        }
        if self.schema_too_large > 0 {
            notes.push(format!(
                "{} tools with a parameter schema over {} bytes (tools.mcp.max_schema_bytes) were left out: {}",
                self.schema_too_large,
                l.max_schema_bytes,
                self.schema_too_large_names.join(", ")
            ));
        }
        if self.descriptions_cut > 0 {
            notes.push(format!(
                "{} tool descriptions were cut to {} bytes (tools.mcp.max_description_bytes)",
                self.descriptions_cut, l.max_description_bytes
            ));
        }
        if self.bad_names > 0 {
            tracing::warn!(mcp_server = %self.server, skipped = self.bad_names,
                "skipping MCP tools whose names cannot be offered");
        }
        Listing {
            tools: self.tools,
            notes,
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut_to_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, schema_bytes: usize) -> RemoteTool {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), Value::String("object".into()));
        schema.insert(
            "description".into(),
            Value::String("x".repeat(schema_bytes)),
        );
        RemoteTool::new(
            name.to_owned(),
            description.to_owned(),
            std::sync::Arc::new(schema),
        )
    }

    #[test]
    fn keeps_tools_within_the_limits_and_says_what_it_left_out() {
        let limits = McpLimits {
            max_tools_per_server: 3,
            max_description_bytes: 64,
            max_schema_bytes: 256,
            ..McpLimits::default()
        };
        let mut keep = Keeper::new("srv", &limits);
        keep.offer(tool("small", "fine", 10));
        keep.offer(tool("wide", "fine", 1000));
        keep.offer(tool("wordy", &"é".repeat(100), 10));
        keep.offer(tool("third", "fine", 10));
        keep.offer(tool("fourth", "fine", 10));
        let listing = keep.finish();
        let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["srv__small", "srv__wordy", "srv__third"]);
        assert_eq!(listing.tools[1].description.len(), 64);
        assert_eq!(listing.notes.len(), 3, "{:?}", listing.notes);
        assert!(
            listing.notes[0].starts_with("1 more tools"),
            "{:?}",
            listing.notes
        );
        assert!(listing.notes[1].contains("wide"), "{:?}", listing.notes);
        assert!(
            listing.notes[2].contains("cut to 64 bytes"),
            "{:?}",
            listing.notes
        );
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut_to_bytes("aé", 2), "a");
        assert_eq!(cut_to_bytes("abc", 5), "abc");
    }
}
