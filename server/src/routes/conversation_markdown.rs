//! A conversation as a Markdown document, written a chunk of messages at a time by the
//! export: it reads like the chat (tool calls as short quoted lines, results in code blocks
//! cut to a readable size, attached files named under the question, and the files a message
//! refers to linked to the file route — images embedded — under the question or the tool
//! result that saved them: a code run's outputs, an MCP tool's images).

use std::fmt::Write as _;

use serde_json::Value;

use super::conversation_files::{markdown_links, referenced};

use crate::db::models::conversation::Conversation;
use crate::db::models::message::Message;
use crate::db::models::message_fallback::Fallback;
use crate::domain::{MessageRole, MessageStatus};
use crate::llm::attachment_note::human_bytes;
use crate::turn::{attachments_of, Attachment};
use std::collections::HashMap;

/// A tool result longer than this is cut in the Markdown export (the JSON keeps it whole).
const MAX_RESULT_CHARS: usize = 2_000;

/// The Markdown document's title and note.
pub fn markdown_head(conv: &Conversation) -> String {
    let mut out = format!("# {}\n\n", conv.title.trim());
    let _ = writeln!(
        out,
        "_Exported from AgentChat on {}{}._\n",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        conv.model
            .as_deref()
            .map(|m| format!(" · model {m}"))
            .unwrap_or_default()
    );
    out
}

/// Messages as they read in the chat (an answer names its model, and the one it stood in
/// for when it was a fallback).
pub fn markdown_messages(
    messages: &[Message],
    fallbacks: &HashMap<uuid::Uuid, Fallback>,
) -> String {
    let mut out = String::new();
    for m in messages {
        let when = m.created_at.format("%Y-%m-%d %H:%M UTC");
        match m.role {
            MessageRole::User => {
                let _ = writeln!(out, "**You** · {when}\n");
                if !m.content.trim().is_empty() {
                    let _ = writeln!(out, "{}\n", m.content.trim());
                }
                let files = attachments_of(m);
                if !files.is_empty() {
                    let _ = writeln!(out, "{}\n", attached_line(&files));
                }
                if let Some(line) = markdown_links(&referenced(m)) {
                    let _ = writeln!(out, "{line}\n");
                }
            }
            MessageRole::Assistant => {
                let _ = write!(out, "**Assistant** · {when}");
                if let Some(model) = &m.model {
                    let _ = write!(out, " · {model}");
                }
                if let Some(f) = fallbacks.get(&m.id) {
                    let _ = write!(out, " _(fallback from {}: {})_", f.from, f.reason);
                }
                if m.status != MessageStatus::Complete {
                    let why = m.status_reason.as_deref().unwrap_or("incomplete");
                    let _ = write!(out, " · _incomplete ({why})_");
                }
                out.push_str("\n\n");
                if !m.content.trim().is_empty() {
                    let _ = writeln!(out, "{}\n", m.content.trim());
                }
                for (name, args) in calls(m.tool_calls.as_ref()) {
                    let _ = writeln!(out, "> Tool call: `{name}` {args}\n");
                }
            }
            MessageRole::Tool => {
                let result = crate::llm::truncate_chars(m.content.trim(), MAX_RESULT_CHARS);
                let _ = writeln!(out, "```json\n{}\n```\n", result.replace("```", "` ` `"));
                if let Some(line) = markdown_links(&referenced(m)) {
                    let _ = writeln!(out, "{line}\n");
                }
            }
        }
    }
    out
}

/// "Attached: `a.txt` (1.2 KB), `b.csv` (12 bytes)" (backticks in a name become quotes).
fn attached_line(files: &[Attachment]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|f| format!("`{}` ({})", f.path.replace('`', "'"), human_bytes(f.bytes)))
        .collect();
    format!("_Attached:_ {}", names.join(", "))
}

/// `(name, arguments as compact JSON)` of each stored tool call.
fn calls(tool_calls: Option<&Value>) -> Vec<(String, String)> {
    let Some(Value::Array(items)) = tool_calls else {
        return Vec::new();
    };
    items
        .iter()
        .map(|c| {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("tool");
            let args = match c.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => "{}".to_owned(),
            };
            (name.to_owned(), format!("`{}`", args.replace('`', "'")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attachments_are_one_line() {
        let files = [
            Attachment {
                path: "notes.txt".into(),
                bytes: 1229,
                sha256: None,
            },
            Attachment {
                path: "a`b.md".into(),
                bytes: 3,
                sha256: None,
            },
        ];
        assert_eq!(
            attached_line(&files),
            "_Attached:_ `notes.txt` (1.2 KB), `a'b.md` (3 bytes)"
        );
    }

    #[test]
    fn tool_calls_are_listed_compactly() {
        let v = json!([{"id": "a", "name": "calculator", "arguments": {"expression": "1+1"}}]);
        assert_eq!(
            calls(Some(&v)),
            vec![(
                "calculator".to_owned(),
                "`{\"expression\":\"1+1\"}`".to_owned()
            )]
        );
        assert!(calls(None).is_empty());
    }
}
