//! Groups to role: the provider's groups decide the role at every sign-in.

/// `group=role` pairs in order, the role for users with no mapped group, and whether such
/// users are refused.
#[derive(Debug, Clone)]
pub struct RoleMap {
    pairs: Vec<(String, String)>,
    default_role: String,
    require_group: bool,
}

/// Most groups read from one ID token, and the longest group name kept.
pub const MAX_GROUPS: usize = 1000;
const MAX_GROUP_BYTES: usize = 512;

impl RoleMap {
    pub fn new(pairs: Vec<(String, String)>, default_role: String, require_group: bool) -> Self {
        Self {
            pairs,
            default_role,
            require_group,
        }
    }

    /// The role of a member of `groups`: the first pair whose group they are in, else the
    /// default role; `None` when no group matches and a match is required.
    pub fn decide(&self, groups: &[String]) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(g, _)| groups.iter().any(|have| have == g))
            .map(|(_, r)| r.as_str())
            .or((!self.require_group).then_some(self.default_role.as_str()))
    }
}

/// The groups in a claim's value: an array of strings, or one string. Other values and
/// oversized names are ignored; at most [`MAX_GROUPS`] are kept.
pub fn groups_from_claim(value: Option<&serde_json::Value>) -> Vec<String> {
    use serde_json::Value;
    let keep = |s: &str| (!s.is_empty() && s.len() <= MAX_GROUP_BYTES).then(|| s.to_owned());
    match value {
        Some(Value::String(s)) => keep(s).into_iter().collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter_map(keep)
            .take(MAX_GROUPS)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(require: bool) -> RoleMap {
        RoleMap::new(
            vec![
                ("admins".into(), "admin".into()),
                ("staff".into(), "member".into()),
            ],
            "guest".into(),
            require,
        )
    }

    #[test]
    fn first_listed_pair_wins_not_the_users_group_order() {
        let groups = vec!["staff".to_owned(), "admins".to_owned()];
        assert_eq!(map(false).decide(&groups), Some("admin"));
        assert_eq!(map(false).decide(&["staff".into()]), Some("member"));
    }

    #[test]
    fn no_match_gives_the_default_or_a_refusal() {
        assert_eq!(map(false).decide(&["other".into()]), Some("guest"));
        assert_eq!(map(true).decide(&["other".into()]), None);
        assert_eq!(map(true).decide(&[]), None);
        assert_eq!(map(false).decide(&["Admins".into()]), Some("guest"));
    }

    #[test]
    fn claim_values_are_read_defensively() {
        assert_eq!(
            groups_from_claim(Some(&json!(["a", 1, "b", ""]))),
            ["a", "b"]
        );
        assert_eq!(groups_from_claim(Some(&json!("solo"))), ["solo"]);
        assert!(groups_from_claim(Some(&json!({"a": 1}))).is_empty());
        assert!(groups_from_claim(None).is_empty());
        let many: Vec<String> = (0..MAX_GROUPS + 5).map(|i| format!("g{i}")).collect();
        assert_eq!(groups_from_claim(Some(&json!(many))).len(), MAX_GROUPS);
    }
}
