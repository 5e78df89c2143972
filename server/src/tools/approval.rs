//! Approval policy: who must confirm a call of a tool before it runs. A role maps tool names
//! (or `{server}__*`) to `none`, `user` or `admin`; a tool the role's map does not name needs
//! its own default: none for most, the person chatting for an MCP tool its server does not
//! annotate `readOnlyHint: true` (the MCP specification's advice for tools that may change
//! things) and for a built-in tool that says so (`remember`). An explicit `none` overrides
//! that default.

use std::collections::BTreeMap;

use serde_json::Value;

pub use crate::domain::Approver;

/// A role's approval map as stored (`roles.approvals`).
pub type ApprovalMap = BTreeMap<String, Approver>;

/// Reads a stored map; entries that do not parse are ignored (the API never stores them).
pub fn from_json(v: &Value) -> ApprovalMap {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Approver::parse(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Who must confirm a call of `tool` under `map`. `default`: the tool's own ([`DefaultApprover`]).
/// An exact entry wins over a `{server}__*` entry, which wins over the default.
pub fn required(map: &ApprovalMap, tool: &str, default: DefaultApprover) -> Approver {
    if let Some(a) = map.get(tool) {
        return *a;
    }
    let pattern = map
        .iter()
        .find(|(entry, _)| entry.ends_with('*') && super::policy::entry_matches(entry, tool));
    if let Some((_, a)) = pattern {
        return *a;
    }
    match default {
        DefaultApprover::Mcp { read_only: false } => Approver::User,
        DefaultApprover::Mcp { read_only: true } => Approver::None,
        DefaultApprover::Tool(a) => a,
    }
}

/// Who confirms a call of a tool the role's map does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultApprover {
    /// An MCP tool: the person chatting, unless its server annotates it read-only.
    Mcp { read_only: bool },
    /// Another tool: its own default ([`super::Tool::default_approver`]).
    Tool(Approver),
}

/// No approval (a tool without a default of its own, or one no longer known).
pub const NO_DEFAULT: DefaultApprover = DefaultApprover::Tool(Approver::None);

/// Whether MCP annotations mark a tool read-only (`readOnlyHint: true`, nothing else).
pub fn annotated_read_only(annotations: &Value) -> bool {
    annotations.get("readOnlyHint").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MCP_WRITES: DefaultApprover = DefaultApprover::Mcp { read_only: false };
    const MCP_READS: DefaultApprover = DefaultApprover::Mcp { read_only: true };

    fn map(entries: &[(&str, Approver)]) -> ApprovalMap {
        entries.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn defaults_none_for_builtins_and_user_for_mcp_tools_that_may_write_and_remember() {
        let empty = ApprovalMap::new();
        assert_eq!(required(&empty, "calculator", NO_DEFAULT), Approver::None);
        assert_eq!(required(&empty, "fs__write", MCP_WRITES), Approver::User);
        assert_eq!(required(&empty, "fs__read", MCP_READS), Approver::None);
        let asks = DefaultApprover::Tool(Approver::User);
        assert_eq!(required(&empty, "remember", asks), Approver::User);
        let none = map(&[("remember", Approver::None)]);
        assert_eq!(required(&none, "remember", asks), Approver::None);
    }

    #[test]
    fn explicit_entries_override_defaults_and_exact_beats_pattern() {
        let m = map(&[
            ("fs__*", Approver::Admin),
            ("fs__read", Approver::None),
            ("write_file", Approver::User),
        ]);
        assert_eq!(required(&m, "fs__write", MCP_WRITES), Approver::Admin);
        assert_eq!(required(&m, "fs__list", MCP_READS), Approver::Admin);
        assert_eq!(required(&m, "fs__read", MCP_WRITES), Approver::None);
        assert_eq!(required(&m, "write_file", NO_DEFAULT), Approver::User);
        assert_eq!(required(&m, "fsx__write", MCP_WRITES), Approver::User);
    }

    #[test]
    fn stored_maps_ignore_what_does_not_parse() {
        let m = from_json(&serde_json::json!({"a": "user", "b": "maybe", "c": 3}));
        assert_eq!(m, map(&[("a", Approver::User)]));
        assert!(annotated_read_only(
            &serde_json::json!({"readOnlyHint": true})
        ));
        assert!(!annotated_read_only(
            &serde_json::json!({"readOnlyHint": "true"})
        ));
        assert!(!annotated_read_only(&serde_json::json!({})));
    }
}
