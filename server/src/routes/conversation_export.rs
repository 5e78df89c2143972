//! `GET /api/conversations/{id}/export?format=markdown|json`: a conversation to keep or share,
//! as a download. Markdown reads like the chat (tool calls as short quoted lines, results in
//! code blocks cut to a readable size, attached files named under the question); JSON is the
//! full record, the same shape as `GET /api/conversations/{id}` (`attachments` included).

use std::fmt::Write as _;

use actix_web::http::header::{ContentDisposition, DispositionParam, DispositionType};
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::models::conversation::Conversation;
use crate::db::models::message::Message;
use crate::db::{self, models::conversation, models::message};
use crate::domain::{MessageRole, MessageStatus};
use crate::error::ApiError;
use crate::llm::attachment_note::human_bytes;
use crate::state::AppState;
use crate::turn::{attachments_of, Attachment};

/// A tool result longer than this is cut in the Markdown export (the JSON keeps it whole).
const MAX_RESULT_CHARS: usize = 2_000;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `markdown` (default) or `json`.
    format: Option<String>,
}

/// Downloads a conversation as Markdown or JSON.
#[utoipa::path(get, path = "/api/conversations/{id}/export", tag = "conversations",
    params(("id" = Uuid, Path), ExportQuery),
    responses((status = 200, description = "The conversation as a file", content_type = "text/markdown"),
    (status = 400, description = "Unknown format", body = crate::error::ErrorBody)))]
pub async fn export(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    query: web::Query<ExportQuery>,
) -> Result<HttpResponse, ApiError> {
    let format = query.format.as_deref().unwrap_or("markdown");
    if !matches!(format, "markdown" | "json") {
        return Err(ApiError::bad_request(
            "invalid_format",
            "format must be markdown or json",
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    let conv = conversation::find_owned(&mut conn, *id, who.id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    let messages = message::list(&mut conn, conv.id).await?;
    let (body, content_type, ext) = if format == "json" {
        let mut doc = serde_json::to_value(&conv).map_err(ApiError::internal)?;
        doc["messages"] = serde_json::to_value(&messages).map_err(ApiError::internal)?;
        doc["exported_at"] = json!(chrono::Utc::now());
        let text = serde_json::to_string_pretty(&doc).map_err(ApiError::internal)?;
        (text, "application/json", "json")
    } else {
        (
            markdown(&conv, &messages),
            "text/markdown; charset=utf-8",
            "md",
        )
    };
    let disposition = ContentDisposition {
        disposition: DispositionType::Attachment,
        parameters: vec![DispositionParam::Filename(format!(
            "{}.{ext}",
            file_stem(&conv.title)
        ))],
    };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(disposition)
        .body(body))
}

/// A file name from the title: letters, digits and dashes, at most 60 characters.
fn file_stem(title: &str) -> String {
    let mut stem = String::new();
    for c in title.chars() {
        if c.is_alphanumeric() {
            stem.extend(c.to_lowercase());
        } else if !stem.ends_with('-') && !stem.is_empty() {
            stem.push('-');
        }
        if stem.chars().count() >= 60 {
            break;
        }
    }
    let stem = stem.trim_end_matches('-');
    if stem.is_empty() {
        "conversation".to_owned()
    } else {
        stem.to_owned()
    }
}

/// The conversation as a Markdown document.
fn markdown(conv: &Conversation, messages: &[Message]) -> String {
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
            }
            MessageRole::Assistant => {
                let _ = write!(out, "**Assistant** · {when}");
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

    #[test]
    fn file_names_are_tame() {
        assert_eq!(file_stem("Q3 report: draft #2!"), "q3-report-draft-2");
        assert_eq!(file_stem("../../etc/passwd"), "etc-passwd");
        assert_eq!(file_stem("???"), "conversation");
        assert_eq!(file_stem("数据 分析"), "数据-分析");
        assert!(file_stem(&"a".repeat(500)).len() <= 60);
    }

    #[test]
    fn attachments_are_one_line() {
        let files = [
            Attachment {
                path: "notes.txt".into(),
                bytes: 1229,
            },
            Attachment {
                path: "a`b.md".into(),
                bytes: 3,
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
