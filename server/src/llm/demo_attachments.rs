//! The demo model and attached files: it reads each file the last user message attached
//! (with `read_file`, one call per step) and then says what it found, so that attachments
//! can be tried offline.

use serde_json::Value;

use super::attachment_note::{self, human_bytes};
use super::{ChatRequest, Role, ToolChoice};

/// Attached files the demo opens per message; it names the others.
const MAX_READS: usize = 3;
/// Lines of each file quoted in the answer, and the longest quoted line.
const QUOTED_LINES: usize = 5;
const QUOTED_CHARS: usize = 120;

/// What the demo does next about the files the last user message attached.
pub(super) enum Next {
    /// Reads this file with `read_file`.
    Read(String),
    /// Answers with this text.
    Say(String),
}

/// `None` when the last user message attached nothing (the demo answers as usual).
pub(super) fn next(req: &ChatRequest) -> Option<Next> {
    let at = req.messages.iter().rposition(|m| m.role == Role::User)?;
    if !matches!(
        req.messages.last().map(|m| m.role),
        Some(Role::User | Role::Tool)
    ) {
        return None;
    }
    let attached = attachment_note::parse(&req.messages[at].content);
    if attached.is_empty() {
        return None;
    }
    let steps = &req.messages[at + 1..];
    let can_read =
        req.tool_choice != ToolChoice::None && req.tools.iter().any(|t| t.name == "read_file");
    if !can_read {
        return Some(Next::Say(format!(
            "You attached {}, but your role does not allow the `read_file` tool, so I cannot \
             open it. An admin can allow it under Roles & tools.",
            names(&attached)
        )));
    }
    // Every call made, answered or failed, counts as read: the demo never asks twice.
    let reads: Vec<(String, &str, Option<&str>)> = steps
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .filter(|c| c.name == "read_file")
        .filter_map(|c| {
            let args: Value = serde_json::from_str(&c.arguments).ok()?;
            let path = args.get("path")?.as_str()?.to_owned();
            let result = steps
                .iter()
                .find(|r| r.role == Role::Tool && r.tool_call_id.as_deref() == Some(&c.id))
                .map(|r| r.content.as_str());
            Some((path, c.id.as_str(), result))
        })
        .collect();
    if let Some(path) = attached
        .iter()
        .take(MAX_READS)
        .find(|p| !reads.iter().any(|(r, _, _)| r == *p))
    {
        return Some(Next::Read((*path).to_owned()));
    }
    let mut parts: Vec<String> = reads
        .iter()
        .map(|(path, _, result)| describe(path, result.unwrap_or("")))
        .collect();
    if attached.len() > MAX_READS {
        parts.push(format!(
            "I only open {MAX_READS} files per message; ask me about {} next.",
            names(&attached[MAX_READS..])
        ));
    }
    Some(Next::Say(parts.join("\n\n")))
}

/// `` `a.txt` `` / `` `a.txt` and `b.csv` `` / `` `a`, `b` and `c` ``.
fn names(paths: &[&str]) -> String {
    let quoted: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// What one `read_file` result says about an attached file: its size in lines, words and
/// bytes and how it begins, or why it could not be read.
fn describe(path: &str, content: &str) -> String {
    let parsed: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    if let Some(err) = parsed.get("error").filter(|e| !e.is_null()) {
        let why = err.as_str().map_or_else(|| err.to_string(), str::to_owned);
        return format!("I could not read the attached file `{path}`: {why}");
    }
    let data = parsed.get("data").unwrap_or(&parsed);
    let text = data.get("content").and_then(Value::as_str).unwrap_or("");
    let lines = data
        .get("total_lines")
        .and_then(Value::as_u64)
        .unwrap_or(text.lines().count() as u64);
    let bytes = data
        .get("total_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(text.len() as u64);
    let words = text.split_whitespace().count();
    let partial = data.get("truncated").and_then(Value::as_bool) == Some(true);
    let mut out = format!(
        "I read the attached file `{path}`: {lines} line{}, {}, {words} word{}{}.",
        if lines == 1 { "" } else { "s" },
        human_bytes(bytes),
        if words == 1 { "" } else { "s" },
        if partial { " in the part I read" } else { "" },
    );
    let quoted: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(QUOTED_LINES)
        .map(|l| format!("> {}", super::truncate_chars(l, QUOTED_CHARS)))
        .collect();
    if quoted.is_empty() {
        out.push_str(" It is empty.");
    } else {
        out.push_str(" It begins:\n\n");
        out.push_str(&quoted.join("\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ToolCall, ToolSpec};
    use serde_json::json;

    fn request(messages: Vec<ChatMessage>, tools: &[&str]) -> ChatRequest {
        ChatRequest {
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).into(),
                    description: String::new(),
                    parameters: json!({}),
                })
                .collect(),
            ..ChatRequest::new("demo", messages)
        }
    }

    fn user() -> ChatMessage {
        ChatMessage::user(attachment_note::append(
            "summarise",
            [("notes.txt", 30), ("b.csv", 5)],
        ))
    }

    fn read(id: &str, path: &str, result: Value) -> [ChatMessage; 2] {
        [
            ChatMessage {
                role: Role::Assistant,
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: "read_file".into(),
                    arguments: json!({"path": path}).to_string(),
                }],
                tool_call_id: None,
                images: Vec::new(),
            },
            ChatMessage {
                role: Role::Tool,
                content: result.to_string(),
                tool_calls: Vec::new(),
                tool_call_id: Some(id.into()),
                images: Vec::new(),
            },
        ]
    }

    #[test]
    fn reads_each_attached_file_then_says_what_is_in_it() {
        let tools = ["read_file", "list_files"];
        let Some(Next::Read(p)) = next(&request(vec![user()], &tools)) else {
            panic!("first step reads");
        };
        assert_eq!(p, "notes.txt");
        let ok = json!({"success": true, "error": null, "data": {"content": "Quarterly plan\n\nship it\n",
            "total_lines": 3, "total_bytes": 24, "truncated": false}});
        let mut msgs = vec![user()];
        msgs.extend(read("c1", "notes.txt", ok));
        let Some(Next::Read(p)) = next(&request(msgs.clone(), &tools)) else {
            panic!("second step reads the second file");
        };
        assert_eq!(p, "b.csv");
        msgs.extend(read(
            "c2",
            "b.csv",
            json!({"success": false, "data": null, "error": "not found"}),
        ));
        let Some(Next::Say(text)) = next(&request(msgs, &tools)) else {
            panic!("then it answers");
        };
        assert_eq!(
            text,
            "I read the attached file `notes.txt`: 3 lines, 24 bytes, 4 words. It begins:\n\n\
             > Quarterly plan\n> ship it\n\n\
             I could not read the attached file `b.csv`: not found"
        );
    }

    #[test]
    fn without_the_tool_it_says_so_and_without_attachments_it_stays_out() {
        let Some(Next::Say(text)) = next(&request(vec![user()], &["list_files"])) else {
            panic!("says why");
        };
        assert!(text.contains("`notes.txt` and `b.csv`"), "{text}");
        assert!(
            text.contains("does not allow the `read_file` tool"),
            "{text}"
        );
        assert!(next(&request(
            vec![ChatMessage::user("list my files")],
            &["read_file"]
        ))
        .is_none());
    }
}
