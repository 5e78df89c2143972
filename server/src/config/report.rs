//! `agentchat config check`: every effective setting, where it came from (default, file,
//! environment), secrets hidden.

use std::path::Path;

use serde_json::Value;

use super::env;
use super::Settings;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    File(String),
    Environment(&'static str),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File(p) => write!(f, "file {p}"),
            Self::Environment(name) => write!(f, "env {name}"),
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    /// The value as TOML would write it; secrets are `"<hidden>"`.
    pub value: String,
    pub origin: Origin,
}

/// The effective settings, key by key, in the file's order.
pub fn entries(
    settings: &Settings,
    file: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<Entry> {
    let file_tree: Option<toml::Value> = file
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| t.parse::<toml::Table>().ok())
        .map(toml::Value::Table);
    let effective = serde_json::to_value(settings).unwrap_or(Value::Null);
    let mut out = Vec::new();
    for (key, value) in leaves(&effective) {
        let from_env = env::var_for(&key)
            .filter(|v| env(v.name).is_some_and(|s| !s.trim().is_empty()))
            .map(|v| Origin::Environment(v.name));
        let origin = from_env.unwrap_or_else(|| match (&file_tree, file) {
            (Some(tree), Some(p)) if lookup(tree, &key).is_some() => {
                Origin::File(p.display().to_string())
            }
            _ => Origin::Default,
        });
        out.push(Entry {
            key,
            value: show(&value),
            origin,
        });
    }
    out
}

/// The report as text: `key = value  # origin`, one setting a line.
pub fn render(entries: &[Entry]) -> String {
    let width = entries.iter().map(|e| e.key.len()).max().unwrap_or(0);
    entries
        .iter()
        .map(|e| format!("{:width$} = {}  # {}\n", e.key, e.value, e.origin))
        .collect()
}

/// Every leaf of a settings tree as (`a.b.c`, value); arrays are leaves.
pub fn leaves(v: &Value) -> Vec<(String, Value)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, child, out);
                }
            }
            leaf => out.push((prefix.to_owned(), leaf.clone())),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}

fn lookup<'a>(tree: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(tree, |node, part| node.get(part))
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "(unset)".to_owned(),
        other => other.to_string(),
    }
}
