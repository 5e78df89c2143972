//! `GET /api/conversations/{id}/export?format=markdown|json`: a conversation to keep or share,
//! as a download. Markdown reads like the chat ([`super::conversation_markdown`]); JSON is
//! the full record, the same shape as `GET /api/conversations/{id}` (`attachments` included)
//! with every message, and on a message that refers to files their references
//! (`files: [{path, mime, bytes, sha256?, source, image, href}]`,
//! [`super::conversation_files`]): never the files' bytes. Both are streamed a chunk of messages at a time.

use actix_web::http::header::{ContentDisposition, DispositionParam, DispositionType};
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::models::conversation::Conversation;
use crate::db::models::message::Message;
use crate::db::{self, models::conversation, models::message_fallback, models::message_window};

/// The fallback answers of a chunk, by message.
type Fallbacks = std::collections::HashMap<Uuid, message_fallback::Fallback>;
use crate::error::ApiError;
use crate::state::AppState;

use super::conversation_files::referenced;
use super::conversation_markdown::{markdown_head, markdown_messages};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `markdown` (default) or `json`.
    format: Option<String>,
}

/// Messages read and written per step of an export.
const CHUNK: i64 = 200;

/// Downloads a conversation as Markdown or JSON, streamed: it is read and written a chunk
/// of messages at a time (a connection is held only while a chunk is read), so an export
/// costs the same memory whatever the conversation's length.
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
    let format = match query.format.as_deref().unwrap_or("markdown") {
        "markdown" => Format::Markdown,
        "json" => Format::Json,
        _ => {
            return Err(ApiError::bad_request(
                "invalid_format",
                "format must be markdown or json",
            ))
        }
    };
    let conv = {
        let mut conn = db::conn(&state.pool).await?;
        conversation::find_owned(&mut conn, *id, who.id)
            .await?
            .ok_or_else(|| ApiError::not_found("conversation"))?
    };
    let head = match format {
        Format::Json => json_head(&conv)?,
        Format::Markdown => markdown_head(&conv),
    };
    let disposition = ContentDisposition {
        disposition: DispositionType::Attachment,
        parameters: vec![DispositionParam::Filename(format!(
            "{}.{}",
            file_stem(&conv.title),
            format.extension()
        ))],
    };
    let body = chunks(state.pool.clone(), conv.id, format, head);
    Ok(HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header(disposition)
        .streaming(body))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Markdown,
    Json,
}

impl Format {
    fn content_type(self) -> &'static str {
        match self {
            Format::Markdown => "text/markdown; charset=utf-8",
            Format::Json => "application/json",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Json => "json",
        }
    }
}

/// Where a streamed export is.
enum Step {
    Head(String),
    After { seq: Option<i64>, written: bool },
    Done,
}

/// The head, then the messages a chunk at a time, then the tail. A database error ends the
/// stream with an error: the client sees a broken download, never a short file that looks
/// whole.
fn chunks(
    pool: db::Pool,
    conversation_id: Uuid,
    format: Format,
    head: String,
) -> impl futures_util::Stream<Item = Result<web::Bytes, actix_web::Error>> {
    futures_util::stream::unfold(Step::Head(head), move |step| {
        let pool = pool.clone();
        async move {
            let (seq, written) = match step {
                Step::Done => return None,
                Step::Head(head) => {
                    let next = Step::After {
                        seq: None,
                        written: false,
                    };
                    return Some((Ok(web::Bytes::from(head)), next));
                }
                Step::After { seq, written } => (seq, written),
            };
            let read = async {
                let mut conn = db::conn(&pool).await?;
                let messages =
                    message_window::chunk_after(&mut conn, conversation_id, seq, CHUNK).await?;
                let ids: Vec<Uuid> = messages.iter().map(|m| m.id).collect();
                let fallbacks = message_fallback::of_messages(&mut conn, &ids).await?;
                Ok::<_, ApiError>((messages, fallbacks))
            };
            let (messages, fallbacks) = match read.await {
                Ok(m) => m,
                Err(e) => {
                    e.log_source();
                    return Some((Err(e.into()), Step::Done));
                }
            };
            let Some(last) = messages.last().map(|m| m.seq) else {
                let tail = if format == Format::Json { "]}\n" } else { "" };
                return Some((Ok(web::Bytes::from_static(tail.as_bytes())), Step::Done));
            };
            let text = match format {
                Format::Json => json_messages(&messages, &fallbacks, written),
                Format::Markdown => Ok(markdown_messages(&messages, &fallbacks)),
            };
            let next = Step::After {
                seq: Some(last),
                written: true,
            };
            Some((text.map(web::Bytes::from).map_err(Into::into), next))
        }
    })
}

/// The conversation's fields as JSON, left open for its `messages`.
fn json_head(conv: &Conversation) -> Result<String, ApiError> {
    let mut doc = serde_json::to_value(conv).map_err(ApiError::internal)?;
    doc["exported_at"] = json!(chrono::Utc::now());
    let mut text = serde_json::to_string(&doc).map_err(ApiError::internal)?;
    text.pop(); // the closing brace
    text.push_str(",\"messages\":[");
    Ok(text)
}

/// Messages as JSON array items; `after_others`: a comma goes first.
fn json_messages(
    messages: &[Message],
    fallbacks: &Fallbacks,
    after_others: bool,
) -> Result<String, ApiError> {
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        if after_others || i > 0 {
            out.push(',');
        }
        let mut v = serde_json::to_value(m).map_err(ApiError::internal)?;
        message_fallback::annotate(&mut v, fallbacks);
        let files = referenced(m);
        if !files.is_empty() {
            v["files"] = serde_json::to_value(files).map_err(ApiError::internal)?;
        }
        out.push_str(&serde_json::to_string(&v).map_err(ApiError::internal)?);
    }
    Ok(out)
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
}
