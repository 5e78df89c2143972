//! JSON Schema handling for tool arguments: deriving the schema from a typed
//! argument struct ([`args_schema`]) and validating raw arguments against it
//! ([`ArgsValidator`]) with error messages that name the field path.

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::{Location, LocationSegment};
use jsonschema::{Draft, ValidationError};
use schemars::JsonSchema;
use serde_json::Value;

use super::{truncate_chars, ToolError};

/// At most this many individual problems are listed in one error message.
const MAX_REPORTED_ERRORS: usize = 5;
/// Field names longer than this are shortened in messages.
const MAX_FIELD_CHARS: usize = 64;

/// The JSON Schema (draft-07) of the argument type `T`, as sent to the model.
///
/// Sub-schemas are inlined (no `$ref`/`definitions` unless the type is
/// recursive) and the `$schema`/`title` keys are dropped, because LLM
/// providers handle flat schemas best. Doc comments on fields become
/// `description`s; `#[serde(deny_unknown_fields)]` becomes
/// `"additionalProperties": false`.
pub fn args_schema<T: JsonSchema>() -> Value {
    let settings = schemars::gen::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let root = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(root).unwrap_or_else(|_| {
        // Serialising a schemars RootSchema cannot fail; stay permissive if it does.
        serde_json::json!({"type": "object"})
    });
    if let Some(obj) = value.as_object_mut() {
        obj.remove("title");
        obj.remove("$schema");
        // The tool's own description says what the arguments are for.
        obj.remove("description");
    }
    drop_numeric_formats(&mut value);
    value
}

/// Removes schemars' Rust-type formats (`uint32`, `double`, ...): they are no JSON Schema
/// formats, validate nothing (`type` and the bounds do) and cost tokens on every model call.
fn drop_numeric_formats(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let rust_type = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                ["int", "uint", "float", "double"]
                    .iter()
                    .any(|p| f.starts_with(p))
            });
            if rust_type {
                map.remove("format");
            }
            map.values_mut().for_each(drop_numeric_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_numeric_formats),
        _ => {}
    }
}

/// A compiled validator for one tool's argument schema.
#[derive(Debug)]
pub struct ArgsValidator {
    inner: jsonschema::Validator,
}

impl ArgsValidator {
    /// Compile `schema` (interpreted as draft-07, the dialect `schemars` 0.8 emits).
    ///
    /// Returns a description of the problem if the schema itself is invalid.
    pub fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .with_draft(Draft::Draft7)
            .build(schema)
            .map(|inner| Self { inner })
            .map_err(|e| e.to_string())
    }

    /// Check `args` against the schema.
    ///
    /// On failure returns [`ToolError::InvalidArguments`] whose message lists
    /// up to five problems as `"<field path>: <problem>"`, joined by `"; "`,
    /// e.g. `"expression: is a required property"` or
    /// `"items[2].name: value is not of type \"string\""`. Values themselves
    /// are never echoed (they may be huge or sensitive).
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let mut messages: Vec<String> = Vec::new();
        let mut total = 0usize;
        for err in self.inner.iter_errors(args) {
            for msg in describe(&err) {
                total += 1;
                if messages.len() < MAX_REPORTED_ERRORS {
                    messages.push(msg);
                }
            }
        }
        if total == 0 {
            return Ok(());
        }
        let mut text = messages.join("; ");
        if total > messages.len() {
            text.push_str(&format!(" (and {} more)", total - messages.len()));
        }
        Err(ToolError::InvalidArguments(text))
    }
}

/// One or more `"<path>: <problem>"` strings for a validation error.
fn describe(err: &ValidationError<'_>) -> Vec<String> {
    let base = field_path(err.instance_path());
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = match property {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            vec![format!("{}: is a required property", join(&base, &name))]
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| format!("{}: unknown field (not allowed)", join(&base, name)))
            .collect(),
        _ => {
            let field = if base.is_empty() {
                "(arguments)".to_owned()
            } else {
                base
            };
            vec![format!("{field}: {}", err.masked())]
        }
    }
}

/// Render an instance location as `a.b[3].c`; the root is the empty string.
fn field_path(location: &Location) -> String {
    let mut out = String::new();
    for segment in location.iter() {
        match segment {
            LocationSegment::Property(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&truncate_chars(&name, MAX_FIELD_CHARS));
            }
            LocationSegment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn join(base: &str, name: &str) -> String {
    let name = truncate_chars(name, MAX_FIELD_CHARS);
    if base.is_empty() {
        name
    } else {
        format!("{base}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Test args.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// The expression.
        #[schemars(length(max = 10))]
        expression: String,
        items: Option<Vec<Item>>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        name: String,
    }

    fn validator() -> ArgsValidator {
        ArgsValidator::new(&args_schema::<Args>()).unwrap()
    }

    fn err_msg(v: Value) -> String {
        match validator().validate(&v) {
            Err(ToolError::InvalidArguments(m)) => m,
            other => panic!("expected InvalidArguments, got {other:?}"),
        }
    }

    #[test]
    fn schema_is_flat_and_strict() {
        let s = args_schema::<Args>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["properties"]["expression"]["description"],
            "The expression."
        );
        assert!(s.get("$schema").is_none());
        assert!(s.get("title").is_none());
        assert!(s.get("definitions").is_none(), "{s}");
    }

    #[test]
    fn valid_passes() {
        validator()
            .validate(&json!({"expression": "1+1", "items": [{"name": "a"}]}))
            .unwrap();
    }

    #[test]
    fn missing_field_named() {
        assert_eq!(err_msg(json!({})), "expression: is a required property");
    }

    #[test]
    fn wrong_type_named() {
        let m = err_msg(json!({"expression": 5}));
        assert!(m.starts_with("expression: "), "{m}");
        assert!(m.contains("string"), "{m}");
    }

    #[test]
    fn nested_path_named() {
        let m = err_msg(json!({"expression": "1", "items": [{"name": "a"}, {"name": 3}]}));
        assert!(m.starts_with("items[1].name: "), "{m}");
    }

    #[test]
    fn extra_field_named() {
        assert_eq!(
            err_msg(json!({"expression": "1", "bogus": true})),
            "bogus: unknown field (not allowed)"
        );
    }

    #[test]
    fn value_not_echoed() {
        let long = "x".repeat(5000);
        let m = err_msg(json!({ "expression": long }));
        assert!(m.starts_with("expression: "), "{m}");
        assert!(m.len() < 200, "{m}");
    }

    #[test]
    fn many_errors_capped() {
        let mut obj = serde_json::Map::new();
        for i in 0..20 {
            obj.insert(format!("f{i}"), json!(i));
        }
        let m = err_msg(Value::Object(obj));
        assert!(m.contains("more)"), "{m}");
    }
}
