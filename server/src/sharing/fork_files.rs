//! What a copy from another user's link keeps of the files its messages name: nothing that
//! points into the sharer's workspace. An attachment, or a file a tool result lists as saved
//! (`data.files`: a code run's charts, an MCP tool's images), names a path in the *sharer's*
//! workspace; in the copy it would name the same path in the *reader's* — where the chat
//! would show, and the model read, a different file or none. So the references are dropped
//! and the message says which files were not copied: the reader keeps only what they may read.

use serde_json::Value;

use crate::db::models::message::Message;
use crate::domain::{Attachment, MessageRole};

/// `m` (of a conversation in another user's workspace) without its file references.
pub(super) fn drop_foreign_files(m: &mut Message) {
    let files: Vec<Attachment> = m
        .attachments
        .take()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    if !files.is_empty() {
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let note = format!(
            "[Files attached in the shared conversation, not copied: {}]",
            names.join(", ")
        );
        m.content = if m.content.is_empty() {
            note
        } else {
            format!("{}\n\n{note}", m.content)
        };
    }
    if m.role == MessageRole::Tool {
        if let Some(content) = without_saved_files(&m.content) {
            m.content = content;
        }
    }
}

/// A tool result envelope (`{"success", "data": {"files": [{path, ..}]}, ..}`) with its
/// `data.files` replaced by `data.files_not_copied` (their paths); `None` when it lists none.
fn without_saved_files(content: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(content).ok()?;
    let data = v.get_mut("data")?.as_object_mut()?;
    let Value::Array(files) = data.remove("files")? else {
        return None;
    };
    let paths: Vec<Value> = files
        .iter()
        .filter_map(|f| f.get("path").cloned())
        .collect();
    data.insert("files_not_copied".into(), Value::Array(paths));
    serde_json::to_string(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn saved_files_become_names_only() {
        let content = json!({"success": true, "data": {"content": ["hi"], "files": [
            {"path": "outputs/c/mcp/a.png", "mime": "image/png", "bytes": 9}]}, "error": null})
        .to_string();
        let out: Value = serde_json::from_str(&without_saved_files(&content).unwrap()).unwrap();
        assert!(out["data"].get("files").is_none());
        assert_eq!(
            out["data"]["files_not_copied"],
            json!(["outputs/c/mcp/a.png"])
        );
        assert_eq!(out["data"]["content"], json!(["hi"]));
        assert_eq!(
            without_saved_files(r#"{"success":true,"data":"text"}"#),
            None
        );
        assert_eq!(without_saved_files("[hidden]"), None);
    }
}
