//! How the demo model words tool results: as an assistant would say them, never as the raw
//! JSON the tools return.

use chrono::DateTime;
use serde_json::Value;

use super::attachment_note::human_bytes;
use super::{ChatMessage, Role, ToolCall};

/// Phrases the tool results that followed the last user message.
pub(super) fn summarize_tool_results(messages: &[ChatMessage]) -> String {
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map(|i| i + 1)
        .unwrap_or(0);
    let turn = &messages[start..];
    let calls: Vec<&ToolCall> = turn.iter().flat_map(|m| m.tool_calls.iter()).collect();
    let lines: Vec<String> = turn
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            let call = calls
                .iter()
                .find(|c| Some(c.id.as_str()) == m.tool_call_id.as_deref());
            describe_result(call.copied(), &m.content)
        })
        .collect();
    if lines.is_empty() {
        super::demo::help_text()
    } else {
        lines.join("\n")
    }
}

fn describe_result(call: Option<&ToolCall>, content: &str) -> String {
    let args: Value = call
        .and_then(|c| serde_json::from_str(&c.arguments).ok())
        .unwrap_or(Value::Null);
    let name = call.map(|c| c.name.as_str()).unwrap_or("tool");
    let parsed: Option<Value> = serde_json::from_str(content).ok();
    if let Some(err) = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| !e.is_null())
    {
        let msg = err
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return format!("The `{name}` tool reported an error: {msg}");
    }
    // Our tools answer in the `{success, data, error}` envelope: describe the data.
    let payload = parsed
        .as_ref()
        .map(|v| match (v.get("success"), v.get("data")) {
            (Some(_), Some(data)) => data,
            _ => v,
        });
    match name {
        "current_time" => {
            if let Some(text) = payload.and_then(describe_time) {
                return text;
            }
        }
        "list_files" => {
            if let Some(text) = payload.and_then(describe_files) {
                return text;
            }
        }
        "search_knowledge" => {
            if let Some(text) = payload.and_then(describe_passages) {
                return text;
            }
        }
        "web_search" => {
            if let Some(text) = payload.and_then(super::demo_web::describe_web) {
                return text;
            }
        }
        _ => {}
    }
    let value = plain_value(payload, content);
    match name {
        "current_time" => format!("The current time is {value}."),
        "calculator" => match args.get("expression").and_then(Value::as_str) {
            Some(expr) => format!("{expr} = {value}"),
            None => format!("The result is {value}."),
        },
        "list_files" => format!("Here are your files:\n{value}"),
        "remember" => match payload
            .and_then(|p| p.get("remembered"))
            .and_then(Value::as_str)
        {
            Some(note) => format!("Noted — I will remember: {note}"),
            None => format!("The `remember` tool returned: {value}"),
        },
        "read_file" => match args.get("path").and_then(Value::as_str) {
            Some(path) => format!("Contents of {path}:\n{value}"),
            None => format!("The file contains:\n{value}"),
        },
        other => format!("The `{other}` tool returned: {value}"),
    }
}

/// `search_knowledge`'s passages, quoted briefly with their refs as citations.
fn describe_passages(data: &Value) -> Option<String> {
    let results = data.get("results")?.as_array()?;
    if results.is_empty() {
        return Some("I found nothing about that in the documents you can search.".into());
    }
    let lines: Vec<String> = results
        .iter()
        .take(3)
        .filter_map(|r| {
            let text = r.get("text")?.as_str()?;
            let reference = r.get("ref")?.as_str()?;
            let file = r.get("file").and_then(Value::as_str).unwrap_or("a file");
            let quote =
                super::truncate_chars(&text.split_whitespace().collect::<Vec<_>>().join(" "), 200);
            Some(format!("- {quote} [{reference}] ({file})"))
        })
        .collect();
    Some(format!(
        "Here is what your documents say:\n{}",
        lines.join("\n")
    ))
}

/// A tool result reduced to its main value (a JSON string, or a `result`-like field).
fn plain_value(parsed: Option<&Value>, raw: &str) -> String {
    const KEYS: [&str; 10] = [
        "result", "iso8601", "value", "time", "datetime", "now", "files", "content", "text",
        "output",
    ];
    let value = match parsed {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Object(o)) => KEYS.iter().find_map(|k| match o.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| i.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        }),
        _ => None,
    };
    super::truncate_chars(value.as_deref().unwrap_or(raw.trim()), 2000)
}

/// "It is 14:05 on Wednesday, 2 December 2026 (Europe/Paris)." from `current_time`'s data.
fn describe_time(data: &Value) -> Option<String> {
    let at = DateTime::parse_from_rfc3339(data.get("iso8601")?.as_str()?).ok()?;
    let zone = data
        .get("timezone")
        .and_then(Value::as_str)
        .unwrap_or("UTC");
    Some(format!(
        "It is {} on {} ({zone}).",
        at.format("%H:%M"),
        at.format("%A, %-d %B %Y")
    ))
}

/// The workspace listing as a short bulleted list, or how to get a first file.
fn describe_files(data: &Value) -> Option<String> {
    let files = data.get("files")?.as_array()?;
    if files.is_empty() {
        return Some(
            "You have no files yet. Upload one with the Files button, then ask me to read it."
                .to_owned(),
        );
    }
    let matched = data
        .get("matched")
        .and_then(Value::as_u64)
        .unwrap_or(files.len() as u64);
    let noun = if matched == 1 { "file" } else { "files" };
    let mut text = format!("You have {matched} {noun}:");
    for f in files {
        let path = f.get("path").and_then(Value::as_str).unwrap_or("?");
        let size = f.get("size").and_then(Value::as_u64).unwrap_or(0);
        text.push_str(&format!("\n- `{path}` ({})", human_bytes(size)));
    }
    if matched > files.len() as u64 {
        text.push_str(&format!("\n…and {} more.", matched - files.len() as u64));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(name: &str, args: &str, data: Value) -> String {
        let call = ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: args.into(),
        };
        let content = json!({"success": true, "data": data, "error": null}).to_string();
        describe_result(Some(&call), &content)
    }

    #[test]
    fn time_reads_like_a_sentence() {
        let data = json!({"iso8601": "2026-12-02T14:05:09+01:00", "timezone": "Europe/Paris", "weekday": "Wednesday"});
        assert_eq!(
            result("current_time", "{}", data),
            "It is 14:05 on Wednesday, 2 December 2026 (Europe/Paris)."
        );
    }

    #[test]
    fn files_are_a_list_and_none_says_how_to_start() {
        let empty = json!({"files": [], "matched": 0, "truncated": false});
        assert!(result("list_files", "{}", empty).starts_with("You have no files yet."));
        let two = json!({"files": [
            {"path": "notes.txt", "size": 12, "modified": "2026-12-01T10:00:00Z"},
            {"path": "data/q2.csv", "size": 2048, "modified": "2026-12-01T10:00:00Z"}],
            "matched": 2, "truncated": false});
        let text = result("list_files", "{}", two);
        assert_eq!(
            text,
            "You have 2 files:\n- `notes.txt` (12 bytes)\n- `data/q2.csv` (2.0 KB)"
        );
        assert!(!text.contains('{'), "no raw JSON: {text}");
    }

    #[test]
    fn errors_are_reported_as_such() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let content = json!({"success": false, "data": null, "error": "not found"}).to_string();
        assert_eq!(
            describe_result(Some(&call), &content),
            "The `read_file` tool reported an error: not found"
        );
    }
}
