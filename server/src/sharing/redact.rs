//! Hiding the tools' details from a link that asks for it (`redact_tools`): every tool
//! result's content and every tool call's arguments become a marker, and cited passages lose
//! their quoted text. Which tools ran, and everything the people and the assistant wrote,
//! stay. A copy made from such a link keeps the markers: what was hidden is never copied.

use serde_json::{json, Value};

use crate::domain::MessageRole;

/// What a hidden tool result says (to readers, and to the model in a copy).
pub const HIDDEN_OUTPUT: &str =
    "[hidden: the person who shared this conversation hid the tools' outputs]";

/// What hidden tool-call arguments become: an object, so every provider accepts them as a
/// tool call's input in a copy.
pub fn hidden_arguments() -> Value {
    json!({"hidden": "the person who shared this conversation hid the tools' arguments"})
}

/// The parts of a message the marker replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Parts {
    pub content: String,
    pub tool_calls: Option<Value>,
    pub citations: Option<Value>,
}

/// `parts` of a message of `role` with the tools' details hidden.
pub fn hide(role: MessageRole, parts: Parts) -> Parts {
    match role {
        MessageRole::Tool => Parts {
            content: HIDDEN_OUTPUT.to_owned(),
            ..parts
        },
        MessageRole::Assistant => Parts {
            content: parts.content,
            tool_calls: parts.tool_calls.map(hide_arguments),
            citations: parts.citations.map(hide_quotes),
        },
        MessageRole::User => parts,
    }
}

/// `[{id, name, arguments}]` with every `arguments` replaced.
fn hide_arguments(calls: Value) -> Value {
    match calls {
        Value::Array(calls) => Value::Array(
            calls
                .into_iter()
                .map(|mut call| {
                    if let Some(obj) = call.as_object_mut() {
                        obj.insert("arguments".into(), hidden_arguments());
                    }
                    call
                })
                .collect(),
        ),
        // Not the shape the turn stores: hide it whole rather than guess.
        _ => Value::Array(Vec::new()),
    }
}

/// Citations without the passages' text (the file names stay).
fn hide_quotes(citations: Value) -> Value {
    match citations {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|mut c| {
                    if let Some(obj) = c.as_object_mut() {
                        obj.remove("quote");
                    }
                    c
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(content: &str, calls: Option<Value>, citations: Option<Value>) -> Parts {
        Parts {
            content: content.into(),
            tool_calls: calls,
            citations,
        }
    }

    #[test]
    fn tool_outputs_and_arguments_are_hidden_and_the_rest_stays() {
        let out = hide(
            MessageRole::Tool,
            parts(r#"{"success":true,"data":42}"#, None, None),
        );
        assert_eq!(out.content, HIDDEN_OUTPUT);
        let calls = json!([{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]);
        let cites = json!([{"n": 1, "file": "a.md", "quote": "secret passage"}]);
        let out = hide(
            MessageRole::Assistant,
            parts("Let me compute.", Some(calls), Some(cites)),
        );
        assert_eq!(out.content, "Let me compute.");
        assert_eq!(
            out.tool_calls,
            Some(json!([{"id": "c1", "name": "calculator", "arguments": hidden_arguments()}]))
        );
        assert_eq!(out.citations, Some(json!([{"n": 1, "file": "a.md"}])));
        assert!(out
            .tool_calls
            .as_ref()
            .is_some_and(|calls| !calls.to_string().contains("6*7")));
        let user = parts("what is 6*7", None, None);
        assert_eq!(hide(MessageRole::User, user.clone()), user);
        // An unexpected shape is dropped, never shown.
        let odd = hide(MessageRole::Assistant, parts("", Some(json!("6*7")), None));
        assert_eq!(odd.tool_calls, Some(json!([])));
    }
}
