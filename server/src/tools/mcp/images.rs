//! Image content of an MCP tool result, kept as files. The bytes come from a server we do
//! not control, so they are treated like an upload: the declared type must be PNG, JPEG,
//! WebP or GIF, the base64 is measured before it is decoded, the decoded bytes must be the
//! declared format (magic bytes) and go through the upload's normalisation
//! ([`crate::files::image::ImageDecoders::normalise`]: dimensions checked before decoding, decoder limits,
//! re-encoded). What passes is saved to `outputs/<conversation>/mcp/…` in the caller's
//! workspace under its quota, and listed in the tool output's `data.files` (path, type,
//! size, SHA-256), so the chat shows it after a reload and the turn gives it to a model that
//! reads images (`turn::tool_images`). What does not pass becomes a note the model can read,
//! never an error of the call.

use std::sync::Arc;

use base64::Engine;
use image::ImageFormat;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::files::{output_path, WorkspaceError, WorkspaceStore};
use crate::tools::{truncate_chars, ToolContext};

/// Largest image kept, in decoded bytes (the workspace's per-file limit may be lower).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Images kept from one result; later ones are noted.
pub const MAX_IMAGES_PER_RESULT: usize = 8;

/// Where kept images go: the users' workspaces.
#[derive(Clone)]
pub struct ImageKeeper {
    pub store: Arc<WorkspaceStore>,
}

/// What became of a result's image blocks: one summary per block, in order (what the model
/// reads in `content`), and the files saved (`data.files`).
#[derive(Debug, Default)]
pub struct Kept {
    pub blocks: Vec<Value>,
    pub files: Vec<Value>,
}

impl Kept {
    /// Lists the saved files in `data` (an object whenever a result has an image block).
    pub fn list_in(self, data: &mut Value) {
        if let (false, Value::Object(map)) = (self.files.is_empty(), data) {
            map.insert("files".into(), Value::Array(self.files));
        }
    }
}

/// A saved image, as the output lists it.
struct Saved {
    path: String,
    mime: &'static str,
    bytes: u64,
    sha256: String,
    width: u32,
    height: u32,
}

impl ImageKeeper {
    /// The largest image kept: [`MAX_IMAGE_BYTES`] or the workspace's per-file limit.
    fn max_bytes(&self) -> u64 {
        MAX_IMAGE_BYTES.min(self.store.quota().max_file_bytes)
    }

    /// Keeps the image blocks of `result` (the `tools/call` result as JSON) for the caller of
    /// `tool`.
    pub async fn keep(&self, ctx: &ToolContext, tool: &str, result: &Value) -> Kept {
        let images = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"));
        let mut kept = Kept::default();
        for (n, block) in images.enumerate() {
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
            let outcome = if n >= MAX_IMAGES_PER_RESULT {
                Err(format!(
                    "more than {MAX_IMAGES_PER_RESULT} images in one result"
                ))
            } else {
                self.save(ctx, tool, block).await
            };
            match outcome {
                Ok(s) => {
                    kept.files.push(json!({
                        "path": s.path,
                        "mime": s.mime,
                        "bytes": s.bytes,
                        "sha256": s.sha256,
                    }));
                    kept.blocks.push(json!({
                        "type": "image",
                        "path": s.path,
                        "mime_type": s.mime,
                        "bytes": s.bytes,
                        "width": s.width,
                        "height": s.height,
                    }));
                }
                Err(why) => kept.blocks.push(json!({
                    "type": "image",
                    "mime_type": truncate_chars(mime, 64),
                    "note": format!("the image was not kept: {why}"),
                })),
            }
        }
        kept
    }

    /// Checks, normalises and saves one image block; why not, in words for the model.
    async fn save(&self, ctx: &ToolContext, tool: &str, block: &Value) -> Result<Saved, String> {
        let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
        let format = format_of(mime).ok_or_else(|| {
            format!(
                "its type `{}` is not accepted (PNG, JPEG, WebP or GIF only)",
                truncate_chars(mime, 64)
            )
        })?;
        let data = block.get("data").and_then(Value::as_str).unwrap_or("");
        let max = self.max_bytes();
        let bytes = decode(data, max)?;
        let normalised = self
            .store
            .images()
            .normalise(bytes, format)
            .await
            .map_err(|e| e.to_string())?;
        let name = format!(
            "mcp/{}-{}.{}",
            tool,
            &Uuid::new_v4().simple().to_string()[..12],
            normalised.extension
        );
        let path = output_path(ctx.conversation_id, &name).map_err(|e| e.to_string())?;
        let size = normalised.bytes.len() as u64;
        let sha256 = format!("{:x}", Sha256::digest(&normalised.bytes));
        let written = self
            .store
            .write(ctx.user_id, path.as_str(), normalised.bytes, false)
            .await
            .map_err(not_saved)?;
        Ok(Saved {
            path: written.path,
            mime: normalised.info.mime,
            bytes: size,
            sha256,
            width: normalised.info.width,
            height: normalised.info.height,
        })
    }
}

/// The accepted image formats, by their MIME type (never SVG).
fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime.trim().to_ascii_lowercase().as_str() {
        "image/png" => Some(ImageFormat::Png),
        "image/jpeg" | "image/jpg" => Some(ImageFormat::Jpeg),
        "image/webp" => Some(ImageFormat::WebP),
        "image/gif" => Some(ImageFormat::Gif),
        _ => None,
    }
}

/// The bytes of `data` (standard base64), refused by its length alone when they would pass
/// `max` bytes: nothing oversized is decoded.
fn decode(data: &str, max: u64) -> Result<Vec<u8>, String> {
    if data.is_empty() {
        return Err("it has no data".into());
    }
    let longest = max.div_ceil(3) * 4;
    if data.len() as u64 > longest {
        return Err(format!(
            "it is larger than the {max} bytes accepted for an image"
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|_| "its data is not valid base64".to_owned())?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "it is larger than the {max} bytes accepted for an image"
        ));
    }
    Ok(bytes)
}

fn not_saved(e: WorkspaceError) -> String {
    match e {
        WorkspaceError::QuotaExceeded(m) => format!("the workspace quota is exceeded ({m})"),
        WorkspaceError::TooLarge => "it is larger than the workspace's per-file limit".into(),
        other => format!("it could not be saved ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_lengths_are_checked_before_decoding() {
        assert_eq!(format_of("image/PNG"), Some(ImageFormat::Png));
        assert_eq!(format_of("image/svg+xml"), None);
        assert_eq!(format_of(""), None);
        assert_eq!(decode("AAAA", 3).unwrap(), vec![0, 0, 0]);
        assert!(decode("AAAAAAAA", 3).unwrap_err().contains("larger than"));
        assert!(decode("AA=A", 3).unwrap_err().contains("base64"));
        assert!(decode("", 3).unwrap_err().contains("no data"));
        // Padding within the bound, but more bytes than allowed once decoded.
        assert!(decode("AAAA", 2).unwrap_err().contains("larger than"));
    }

    fn encoded(format: ImageFormat) -> String {
        let img = image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            40,
            10,
            image::Rgb([10, 200, 10]),
        ));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, format).unwrap();
        base64::engine::general_purpose::STANDARD.encode(out.into_inner())
    }

    #[tokio::test]
    async fn each_accepted_format_is_kept_under_the_stored_type_and_the_rest_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        let store = WorkspaceStore::new(dir.path().to_owned(), Default::default()).unwrap();
        let keeper = ImageKeeper {
            store: Arc::new(store),
        };
        let ctx = ToolContext {
            user_id: Uuid::new_v4(),
            username: "tester".into(),
            conversation_id: Uuid::new_v4(),
        };
        let mut content = vec![
            json!({"type": "image", "data": encoded(ImageFormat::Jpeg), "mimeType": "image/jpeg"}),
            json!({"type": "image", "data": encoded(ImageFormat::Gif), "mimeType": "image/gif"}),
            json!({"type": "image", "data": encoded(ImageFormat::WebP), "mimeType": "image/webp"}),
            // A PNG declared as JPEG: the bytes decide, and they disagree.
            json!({"type": "image", "data": encoded(ImageFormat::Png), "mimeType": "image/jpeg"}),
        ];
        content.extend(
            (0..MAX_IMAGES_PER_RESULT)
                .map(|_| json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
        );
        let kept = keeper
            .keep(&ctx, "srv__pic", &json!({"content": content}))
            .await;
        assert_eq!(kept.blocks.len(), content.len());
        let ends: Vec<&str> = kept
            .files
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(ends.len(), 3, "{kept:?}");
        let prefix = format!("outputs/{}/mcp/srv__pic-", ctx.conversation_id);
        assert!(ends.iter().all(|p| p.starts_with(&prefix)), "{ends:?}");
        assert!(
            ends[0].ends_with(".jpg") && ends[1].ends_with(".png"),
            "{ends:?}"
        );
        assert_eq!(kept.files[0]["mime"], "image/jpeg");
        for (i, f) in kept.files.iter().enumerate() {
            let bytes = keeper.store.read(ctx.user_id, ends[i]).await.unwrap();
            assert_eq!(f["bytes"], bytes.len());
            assert_eq!(f["sha256"], format!("{:x}", Sha256::digest(&bytes)));
            assert_eq!(
                (
                    kept.blocks[i]["width"].as_u64(),
                    kept.blocks[i]["height"].as_u64()
                ),
                (Some(40), Some(10))
            );
        }
        let note = |i: usize| kept.blocks[i]["note"].as_str().unwrap_or("").to_owned();
        assert!(note(3).contains("bytes are not JPEG"), "{}", note(3));
        assert!(
            note(4).contains("truncated or corrupt") || note(4).contains("not PNG"),
            "{}",
            note(4)
        );
        assert!(note(content.len() - 1).contains("more than 8 images"));
    }

    #[test]
    fn files_are_listed_in_an_object_only() {
        let kept = || Kept {
            blocks: Vec::new(),
            files: vec![json!({"path": "outputs/c/mcp/a.png"})],
        };
        let mut data = json!({"content": []});
        kept().list_in(&mut data);
        assert_eq!(data["files"][0]["path"], "outputs/c/mcp/a.png");
        let mut text = json!("plain");
        kept().list_in(&mut text);
        assert_eq!(text, json!("plain"));
    }
}
