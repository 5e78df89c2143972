//! Images a tool made, given back to the model: the code interpreter lists the files a run
//! saved (`data.files: [{path, mime, bytes}]`); a model that reads images gets the image
//! files among them as image parts of the tool result, so it can check its own chart, and
//! another model a note naming them. Bounded: the model's `max_images` per request (images
//! already in the input count) and its `max_image_bytes` per image.

use serde_json::Value;
use uuid::Uuid;

use crate::catalogue::CatalogueModel;
use crate::files::WorkspaceStore;
use crate::llm::image_part::is_image_path;
use crate::llm::{ChatMessage, ImagePart};
use crate::tools::ToolOutput;

/// The image files a tool's output lists, `(path, bytes)`, in order.
fn listed(output: &ToolOutput) -> Vec<(String, u64)> {
    let Some(Value::Array(files)) = output.data.as_ref().and_then(|d| d.get("files")) else {
        return Vec::new();
    };
    files
        .iter()
        .filter(|f| {
            f.get("mime")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("image/") && m != "image/svg+xml")
        })
        .filter_map(|f| {
            let path = f.get("path")?.as_str()?;
            is_image_path(path).then(|| {
                (
                    path.to_owned(),
                    f.get("bytes").and_then(Value::as_u64).unwrap_or(0),
                )
            })
        })
        .collect()
}

/// Gives `result` (the tool message answering a call whose output is `output`) the images
/// the output lists: as parts for a model that reads them, within what `already` images in
/// the input leave of its `max_images`; as a note otherwise. Nothing is read for an output
/// that lists no image.
pub async fn attach(
    store: &WorkspaceStore,
    user: Uuid,
    model: Option<&CatalogueModel>,
    output: &ToolOutput,
    result: &mut ChatMessage,
    already: usize,
) {
    let files = listed(output);
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
        let out = ToolOutput::ok(json!({"files": [
            {"path": "outputs/c/plot.png", "mime": "image/png", "bytes": 10},
            {"path": "outputs/c/data.csv", "mime": "text/csv", "bytes": 5},
            {"path": "outputs/c/x.svg", "mime": "image/svg+xml", "bytes": 5},
        ]}));
        assert_eq!(listed(&out), [("outputs/c/plot.png".to_owned(), 10)]);
        assert!(listed(&ToolOutput::ok(json!("text"))).is_empty());
    }
}
