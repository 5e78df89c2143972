//! Role allowlists: a role lists tool names, and `{server}__*` allows every tool of an MCP
//! server, present and future. Deny by default: anything not listed is refused.

/// Whether `allowed` (a role's list) lets the role use the tool `name`.
pub fn allows(allowed: &[String], name: &str) -> bool {
    allowed.iter().any(|a| entry_matches(a, name))
}

/// One allowlist entry against a tool name.
pub fn entry_matches(entry: &str, name: &str) -> bool {
    match entry.strip_suffix('*') {
        // Only the `{server}__*` form is a pattern; a bare `*` or `foo*` is not.
        Some(prefix) if prefix.ends_with(super::mcp::tool::SEPARATOR) && prefix.len() > 2 => {
            name.starts_with(prefix) && name.len() > prefix.len()
        }
        _ => entry == name,
    }
}

/// The allowlist that allows exactly what both `a` and `b` allow (an assistant's tools
/// narrowing a role's): equal entries stay, and a `{server}__*` pattern meeting one of its
/// server's tools leaves that tool.
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in a {
        for y in b {
            let kept = if x == y {
                Some(x)
            } else if entry_matches(x, y) {
                Some(y)
            } else if entry_matches(y, x) {
                Some(x)
            } else {
                None
            };
            if let Some(k) = kept {
                if !out.contains(k) {
                    out.push(k.clone());
                }
            }
        }
    }
    out
}

/// The server named by a `{server}__*` entry.
pub fn server_pattern(entry: &str) -> Option<&str> {
    entry
        .strip_suffix("__*")
        .filter(|s| super::mcp::config::valid_server_name(s))
}

/// The concrete tool names `allowed` grants among `names` (for `GET /api/me`).
pub fn expand<'a>(allowed: &[String], names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| allows(allowed, n))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intersection_allows_only_what_both_allow() {
        let role = list(&["calculator", "time__*", "http_get"]);
        let preset = list(&[
            "calculator",
            "time__get_current_time",
            "read_file",
            "web__*",
        ]);
        let both = intersect(&role, &preset);
        assert_eq!(both, list(&["calculator", "time__get_current_time"]));
        assert!(!allows(&both, "time__convert_time"));
        assert!(!allows(&both, "read_file"));
        assert_eq!(
            intersect(&list(&["a__*"]), &list(&["a__*"])),
            list(&["a__*"])
        );
        assert!(intersect(&role, &[]).is_empty());
    }

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn exact_names_and_server_wildcards() {
        let allowed = list(&["calculator", "time__*", "everything__echo"]);
        assert!(allows(&allowed, "calculator"));
        assert!(allows(&allowed, "time__get_current_time"));
        assert!(allows(&allowed, "time__convert_time"));
        assert!(allows(&allowed, "everything__echo"));
        assert!(!allows(&allowed, "everything__add"));
        assert!(!allows(&allowed, "timer__x"));
        assert!(!allows(&allowed, "time__"));
        assert!(!allows(&allowed, "current_time"));
        // Only `{server}__*` is a pattern.
        assert!(!allows(&list(&["*"]), "calculator"));
        assert!(!allows(&list(&["calc*"]), "calculator"));
        assert!(!allows(&list(&["__*"]), "a__b"));
        assert!(!allows(&[], "calculator"));
    }

    #[test]
    fn patterns_and_expansion() {
        assert_eq!(server_pattern("time__*"), Some("time"));
        assert_eq!(server_pattern("Time__*"), None);
        assert_eq!(server_pattern("time__x"), None);
        let got = expand(
            &list(&["time__*", "calculator"]),
            ["calculator", "read_file", "time__a"],
        );
        assert_eq!(got, ["calculator", "time__a"]);
    }
}
