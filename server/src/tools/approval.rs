//! Approval policy: who must confirm a call of a tool before it runs. A role maps tool names
//! (or `{server}__*`) to `none`, `user` or `admin`; a tool the role's map does not name needs
//! no approval, except an MCP tool its server does not annotate `readOnlyHint: true`, which
//! the person chatting confirms (the MCP specification's advice for tools that may change
//! things). An explicit `none` overrides that default.

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

/// Who must confirm a call of `tool` under `map`. `mcp_read_only`: for an MCP tool, whether
/// its server annotates it `readOnlyHint: true` (`None` for other tools). An exact entry wins
/// over a `{server}__*` entry, which wins over the default.
pub fn required(map: &ApprovalMap, tool: &str, mcp_read_only: Option<bool>) -> Approver {
    if let Some(a) = map.get(tool) {
        return *a;
    }
    let pattern = map
        .iter()
        .find(|(entry, _)| entry.ends_with('*') && super::policy::entry_matches(entry, tool));
    if let Some((_, a)) = pattern {
        return *a;
    }
    match mcp_read_only {
        Some(false) => Approver::User,
        _ => Approver::None,
    }
}

/// Whether MCP annotations mark a tool read-only (`readOnlyHint: true`, nothing else).
pub fn annotated_read_only(annotations: &Value) -> bool {
    annotations.get("readOnlyHint").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Approver)]) -> ApprovalMap {
        entries.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn defaults_none_for_builtins_and_user_for_mcp_tools_that_may_write() {
        let empty = ApprovalMap::new();
        assert_eq!(required(&empty, "calculator", None), Approver::None);
        assert_eq!(required(&empty, "fs__write", Some(false)), Approver::User);
        assert_eq!(required(&empty, "fs__read", Some(true)), Approver::None);
    }

    #[test]
    fn explicit_entries_override_defaults_and_exact_beats_pattern() {
        let m = map(&[
            ("fs__*", Approver::Admin),
            ("fs__read", Approver::None),
            ("write_file", Approver::User),
        ]);
        assert_eq!(required(&m, "fs__write", Some(false)), Approver::Admin);
        assert_eq!(required(&m, "fs__list", Some(true)), Approver::Admin);
        assert_eq!(required(&m, "fs__read", Some(false)), Approver::None);
        assert_eq!(required(&m, "write_file", None), Approver::User);
        assert_eq!(required(&m, "fsx__write", Some(false)), Approver::User);
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
