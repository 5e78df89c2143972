//! Images a tool made, given back to the model: the code interpreter lists the files a run
//! saved (`data.files: [{path, mime, bytes}]`); a model that reads images gets the image
//! files among them as image parts of the tool result, so it can check its own chart, and
//! another model a note naming them. Bounded: the model's `max_images` per request (images
//! already in the input count) and its `max_image_bytes` per image.
//!
//! Only files in the conversation's own outputs folder (`outputs/<conversation>/…`, where
//! the code interpreter and the MCP image keeper write) are taken: a tool's output is not
//! trusted to name files, and one that listed `uploads/secret.png` would otherwise have the
//! model shown any image of the user's workspace.

use serde_json::Value;
use uuid::Uuid;

use crate::catalogue::CatalogueModel;
use crate::files::{WorkspacePath, WorkspaceStore, OUTPUTS_DIR};
use crate::llm::image_part::is_image_path;
use crate::llm::{ChatMessage, ImagePart};
use crate::tools::ToolOutput;

/// An image file a tool's output lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listed {
    pub path: String,
    /// Its size as listed (0 when the output did not say).
    pub bytes: u64,
    /// Its SHA-256 as listed (the MCP image keeper records it; the interpreter does not).
    pub sha256: Option<String>,
}

/// The image files `data` (a tool output's `data`) lists in `data.files`, in order: those
/// of an image type (SVG is no image here) whose path is a plain workspace path inside
/// `outputs/<conversation>/`.
pub(super) fn listed_in(data: Option<&Value>, conversation: Uuid) -> Vec<Listed> {
    let Some(Value::Array(files)) = data.and_then(|d| d.get("files")) else {
        return Vec::new();
    };
    let folder = format!("{OUTPUTS_DIR}/{conversation}/");
    files
        .iter()
        .filter(|f| {
            f.get("mime")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("image/") && m != "image/svg+xml")
        })
        .filter_map(|f| {
            let path = f.get("path")?.as_str()?;
            let plain = WorkspacePath::parse(path).is_ok_and(|p| p.as_str() == path);
            (plain && path.starts_with(&folder) && is_image_path(path)).then(|| Listed {
                path: path.to_owned(),
                bytes: f.get("bytes").and_then(Value::as_u64).unwrap_or(0),
                sha256: f.get("sha256").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

/// The image files a tool's output in `conversation` lists, `(path, bytes)`, in order.
fn listed(output: &ToolOutput, conversation: Uuid) -> Vec<(String, u64)> {
    listed_in(output.data.as_ref(), conversation)
        .into_iter()
        .map(|l| (l.path, l.bytes))
        .collect()
}

/// Gives `result` (the tool message answering a call whose output is `output`) the images
/// the output lists: as parts for a model that reads them, within what `already` images in
/// the input leave of its `max_images`; as a note otherwise. Nothing is read for an output
/// that lists no image (or only files outside `conversation`'s outputs).
pub async fn attach(
    store: &WorkspaceStore,
    user: Uuid,
    conversation: Uuid,
    model: Option<&CatalogueModel>,
    output: &ToolOutput,
    result: &mut ChatMessage,
    already: usize,
) {
    let files = listed(output, conversation);
    if files.is_empty() {
        return;
    }
    let Some(model) = model.filter(|m| m.takes_images()) else {
        let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        result.content.push_str(&format!(
            "\n\n(Images saved by this tool, which this model cannot see: {})",
            names.join(", ")
        ));
        return;
    };
    let room = (model.max_images as usize).saturating_sub(already);
    let mut left_out = Vec::new();
    for (path, bytes) in files {
        if result.images.len() >= room || bytes > model.max_image_bytes {
            left_out.push(path);
            continue;
        }
        let Ok(content) = store.read(user, &path).await else {
            left_out.push(path);
            continue;
        };
        let read =
            tokio::task::spawn_blocking(move || ImagePart::read(&path, &content).ok_or(path)).await;
        match read {
            Ok(Ok(image)) if image.bytes <= model.max_image_bytes => {
                result.images.push(image.for_provider(model.kind));
            }
            Ok(Ok(image)) => left_out.push(image.path),
            Ok(Err(path)) => left_out.push(path),
            Err(_) => {}
        }
    }
    if !left_out.is_empty() {
        result.content.push_str(&format!(
            "\n\n(Images not shown to you, over the model's image limits: {})",
            left_out.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_listed_image_files_are_taken() {
        let c = Uuid::from_u128(7);
        let at = |name: &str| format!("outputs/{c}/{name}");
        let out = ToolOutput::ok(json!({"files": [
            {"path": at("plot.png"), "mime": "image/png", "bytes": 10},
            {"path": at("data.csv"), "mime": "text/csv", "bytes": 5},
            {"path": at("x.svg"), "mime": "image/svg+xml", "bytes": 5},
        ]}));
        assert_eq!(listed(&out, c), [(at("plot.png"), 10)]);
        assert!(listed(&ToolOutput::ok(json!("text")), c).is_empty());
    }

    #[test]
    fn only_files_of_the_conversations_outputs_folder_are_taken() {
        let c = Uuid::from_u128(7);
        let other = Uuid::from_u128(8);
        let ok = format!("outputs/{c}/mcp/pic.png");
        let hostile = [
            "uploads/secret.png".to_owned(),
            format!("outputs/{other}/chart.png"),
            format!("outputs/{c}/../../uploads/secret.png"),
            format!("outputs/{c}/./secret.png"),
            format!("/outputs/{c}/secret.png"),
            format!("outputs/{c}//secret.png"),
            format!("outputs/{c}\\..\\secret.png"),
            format!("outputs/{c}"),
            format!("outputs/{c}.png"),
            "outputs/secret.png".to_owned(),
        ];
        let mut files: Vec<Value> = hostile
            .iter()
            .map(|p| json!({"path": p, "mime": "image/png", "bytes": 3}))
            .collect();
        files.push(json!({"path": ok, "mime": "image/png", "bytes": 4, "sha256": "ab"}));
        let data = json!({ "files": files });
        assert_eq!(
            listed_in(Some(&data), c),
            [Listed {
                path: ok,
                bytes: 4,
                sha256: Some("ab".into())
            }]
        );
    }
}
