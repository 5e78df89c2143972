//! The files a message refers to, as the exports give them: a user message's attachments and
//! the files a tool result lists as saved (`data.files`: a code run's outputs, an MCP tool's
//! images). References only — path, type, size, digest when one was recorded, and the link
//! to the workspace file route — never the bytes: an export stays small, and a file is read
//! through the route, under the reader's own rights.

use serde::Serialize;
use serde_json::Value;

use crate::db::models::message::Message;
use crate::domain::MessageRole;
use crate::llm::image_part::is_image_path;
use crate::tools::interpreter::files::mime_of;
use crate::turn::attachments_of;

/// One file a message refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRef {
    /// Its path in the conversation owner's workspace.
    pub path: String,
    /// By its name (`image/png`, `text/csv`, …; `application/octet-stream` when unknown).
    pub mime: &'static str,
    /// Its size when the message was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Lowercase hex, when the message recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `attachment` (sent with a user message) or `tool_output` (saved by a tool).
    pub source: &'static str,
    /// Whether it is an image the chat shows inline.
    pub image: bool,
    /// The file route that serves it (relative to the server).
    pub href: String,
}

/// The files `m` refers to, in order.
pub fn referenced(m: &Message) -> Vec<FileRef> {
    match m.role {
        MessageRole::User => attachments_of(m)
            .into_iter()
            .map(|a| reference(a.path, Some(a.bytes), a.sha256, "attachment"))
            .collect(),
        MessageRole::Tool => saved(&m.content),
        MessageRole::Assistant => Vec::new(),
    }
}

/// The files a successful tool result envelope lists in `data.files`.
fn saved(content: &str) -> Vec<FileRef> {
    let Ok(v) = serde_json::from_str::<Value>(content) else {
        return Vec::new();
    };
    if v.get("success") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let Some(Value::Array(files)) = v.pointer("/data/files") else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|f| {
            let path = f.get("path")?.as_str()?.to_owned();
            let bytes = f.get("bytes").and_then(Value::as_u64);
            let sha = f.get("sha256").and_then(Value::as_str).map(str::to_owned);
            Some(reference(path, bytes, sha, "tool_output"))
        })
        .collect()
}

fn reference(
    path: String,
    bytes: Option<u64>,
    sha256: Option<String>,
    source: &'static str,
) -> FileRef {
    let mime = match mime_of(&path) {
        "application/octet-stream" if path.to_ascii_lowercase().ends_with(".webp") => "image/webp",
        known => known,
    };
    let image = is_image_path(&path) && mime != "image/svg+xml";
    let href = format!(
        "/api/files/{}",
        path.split('/')
            .map(url_segment)
            .collect::<Vec<_>>()
            .join("/")
    );
    FileRef {
        path,
        mime,
        bytes,
        sha256,
        source,
        image,
        href,
    }
}

/// Markdown links to `files`: an image embedded (`![name](href)`), another file linked.
pub fn markdown_links(files: &[FileRef]) -> Option<String> {
    let links: Vec<String> = files
        .iter()
        .map(|f| {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            let bang = if f.image { "!" } else { "" };
            format!("{bang}[{}]({})", name.replace(['[', ']'], "_"), f.href)
        })
        .collect();
    (!links.is_empty()).then(|| format!("_Files:_ {}", links.join(", ")))
}

/// A path segment with everything but unreserved characters percent-encoded.
fn url_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_results_saved_files_are_references() {
        let content = json!({"success": true, "data": {"files": [
            {"path": "outputs/c1/report.csv", "mime": "text/csv", "bytes": 10},
            {"path": "outputs/c1/my chart.png", "mime": "image/png", "bytes": 99, "sha256": "ab"}]}, "error": null})
        .to_string();
        let files = saved(&content);
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].href, "/api/files/outputs/c1/my%20chart.png");
        assert_eq!(
            (files[1].mime, files[1].image, files[1].sha256.as_deref()),
            ("image/png", true, Some("ab"))
        );
        assert_eq!(
            markdown_links(&files).as_deref(),
            Some("_Files:_ [report.csv](/api/files/outputs/c1/report.csv), ![my chart.png](/api/files/outputs/c1/my%20chart.png)")
        );
        assert!(saved(r#"{"success":false,"data":{"files":[{"path":"a.png"}]}}"#).is_empty());
        assert!(saved("not json").is_empty());
        assert_eq!(markdown_links(&[]), None);
        let svg = reference("x.svg".into(), None, None, "tool_output");
        assert!(!svg.image);
    }
}
