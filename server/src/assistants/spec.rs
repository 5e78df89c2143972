//! What an admin writes to create or change an assistant, and its checks that need no
//! database (names, sizes, parameter ranges).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest assistant name (it is also the `/v1` model name `assistant:<name>`).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Longest instructions.
pub const MAX_INSTRUCTIONS_CHARS: usize = 16_000;
/// Most tools, collections and roles one assistant may list.
pub const MAX_LIST: usize = 64;

/// Sampling parameters a preset fixes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssistantParams {
    /// 0 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Caps each answer below the model's own cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// An assistant as an admin sends it (`POST`/`PUT /api/admin/assistants`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssistantSpec {
    /// 1-64 of `A-Z a-z 0-9 _ . -` and single spaces between words.
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub instructions: String,
    /// A catalogue model; absent or null: the server's default model.
    #[serde(default)]
    pub model: Option<String>,
    /// Allowlist entries (tool names or `{server}__*`), as a role lists them.
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub collections: Vec<Uuid>,
    #[serde(default)]
    pub params: AssistantParams,
    /// Roles that see the assistant; empty: every role.
    #[serde(default)]
    pub visible_to_roles: Vec<String>,
}

/// Why a spec was refused, in words (answered as `invalid_assistant`, see `error/`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl AssistantSpec {
    /// Checks what needs no database and puts the lists in a canonical order.
    pub fn normalized(mut self) -> Result<Self, Invalid> {
        self.name = self.name.split_whitespace().collect::<Vec<_>>().join(" ");
        let bad = |m: &str| Err(Invalid(m.to_owned()));
        if !valid_name(&self.name) {
            return bad("name: 1-64 characters of A-Z, a-z, 0-9, `_`, `.`, `-` and spaces");
        }
        if self.description.chars().count() > MAX_DESCRIPTION_CHARS {
            return bad("description: at most 500 characters");
        }
        if self.instructions.trim().is_empty()
            || self.instructions.chars().count() > MAX_INSTRUCTIONS_CHARS
        {
            return bad("instructions: 1-16000 characters");
        }
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            self.model = None;
        }
        if [
            self.tools.len(),
            self.collections.len(),
            self.visible_to_roles.len(),
        ]
        .iter()
        .any(|n| *n > MAX_LIST)
        {
            return bad("tools, collections and visible_to_roles: at most 64 each");
        }
        if let Some(t) = self.params.temperature {
            if !(0.0..=2.0).contains(&t) {
                return bad("params.temperature: 0 to 2");
            }
        }
        if self.params.max_output_tokens == Some(0) {
            return bad("params.max_output_tokens: at least 1");
        }
        for list in [&mut self.tools, &mut self.visible_to_roles] {
            list.sort();
            list.dedup();
        }
        self.collections.sort();
        self.collections.dedup();
        Ok(self)
    }
}

/// Whether `name` may name an assistant: words of `A-Z a-z 0-9 _ . -` with single spaces
/// between them ("Trip planner").
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.chars().count())
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && !name.contains("  ")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ' '))
}

/// The name as a `/v1` model names it, with nothing a URL or a shell would mangle: spaces
/// become `-` ("Trip planner" is `assistant:Trip-planner`).
pub fn api_name(name: &str) -> String {
    name.replace(' ', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> AssistantSpec {
        AssistantSpec {
            name: "helper".into(),
            description: String::new(),
            instructions: "Be brief.".into(),
            model: None,
            tools: vec!["b".into(), "a".into(), "a".into()],
            collections: Vec::new(),
            params: AssistantParams::default(),
            visible_to_roles: Vec::new(),
        }
    }

    #[test]
    fn a_spec_is_checked_and_its_lists_made_canonical() {
        let Ok(s) = spec().normalized() else {
            panic!("a valid spec was refused");
        };
        assert_eq!(s.tools, vec!["a", "b"]);
        let mut spaced = spec();
        spaced.name = "  Trip \t planner ".into();
        let Ok(spaced) = spaced.normalized() else {
            panic!("a name with spaces was refused");
        };
        assert_eq!(spaced.name, "Trip planner");
        assert_eq!(api_name(&spaced.name), "Trip-planner");
        let mut bad = spec();
        bad.name = "has/slash".into();
        assert!(bad.normalized().unwrap_err().0.starts_with("name:"));
        let mut bad = spec();
        bad.params.temperature = Some(3.0);
        assert!(bad.normalized().is_err());
        let mut bad = spec();
        bad.instructions = " ".into();
        assert!(bad.normalized().is_err());
    }
}
