//! Files attached to a user message: paths in the sender's own workspace, checked when the
//! message is sent, recorded on the stored message (`messages.attachments`: path, size and
//! SHA-256 of the content, so a link later serves only that very file) and announced to the
//! model after the message's text ([`crate::llm::attachment_note`]), so that it reads them
//! with its file tools.

use std::collections::HashSet;

use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::db::models::message::Message;
use crate::files::path::{WorkspacePath, MAX_PATH_BYTES};
use crate::files::{WorkspaceError, WorkspaceStore};
use crate::llm::attachment_note;
use crate::llm::image_part::{is_image_path, ImagePart};
use crate::turn::error::TurnError;

/// Most files one message may attach.
pub const MAX_ATTACHMENTS: usize = 10;

pub use crate::domain::Attachment;

/// A message's attachments as checked: every file, and the images among them with their
/// bytes (read once, with the digest) for a model that sees images.
#[derive(Debug, Default)]
pub struct Resolved {
    pub files: Vec<Attachment>,
    pub images: Vec<ImagePart>,
}

/// The files `paths` names in `user`'s workspace, in order and without repeats: 422 when
/// there are too many, a path is not a workspace path, or a file is not there (each user
/// sees only their own workspace, so another user's file is simply not there).
pub async fn resolve(
    store: &WorkspaceStore,
    user: Uuid,
    paths: &[String],
) -> Result<Resolved, TurnError> {
    if paths.is_empty() {
        return Ok(Resolved::default());
    }
    if paths.len() > MAX_ATTACHMENTS {
        return Err(TurnError::Attachment {
            code: "too_many_attachments",
            message: format!("a message may attach at most {MAX_ATTACHMENTS} files"),
        });
    }
    let mut wanted: Vec<String> = Vec::with_capacity(paths.len());
    for raw in paths {
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid(format!(
                "an attachment path may be at most {MAX_PATH_BYTES} bytes"
            )));
        }
        let path = WorkspacePath::parse(raw).map_err(invalid)?;
        if !wanted.iter().any(|w| w == path.as_str()) {
            wanted.push(path.as_str().to_owned());
        }
    }
    let listed: HashSet<String> = store
        .list(user)
        .await
        .map_err(|e| match e {
            io @ WorkspaceError::Io(_) => TurnError::Internal(anyhow::anyhow!("{io}")),
            other => invalid(other.to_string()),
        })?
        .into_iter()
        .map(|f| f.path)
        .collect();
    let mut out = Resolved::default();
    for path in wanted {
        if !listed.contains(&path) {
            return Err(not_found(&path));
        }
        let (file, image) = recorded(store, user, path).await?;
        out.files.push(file);
        out.images.extend(image);
    }
    Ok(out)
}

/// `path` as the message records it: its size and digest, from one reading of its content;
/// and when it is an image (by name and bytes), the image a model may be shown.
async fn recorded(
    store: &WorkspaceStore,
    user: Uuid,
    path: String,
) -> Result<(Attachment, Option<ImagePart>), TurnError> {
    let content = store.read(user, &path).await.map_err(|e| match e {
        WorkspaceError::NotFound => not_found(&path),
        io @ WorkspaceError::Io(_) => TurnError::Internal(anyhow::anyhow!("{io}")),
        other => invalid(other.to_string()),
    })?;
    let bytes = content.len() as u64;
    // Up to `max_file_bytes` of hashing (and base64 for an image): off the async workers.
    let image_path = is_image_path(&path).then(|| path.clone());
    let (digest, image) = tokio::task::spawn_blocking(move || {
        let image = image_path.and_then(|p| ImagePart::read(&p, &content));
        (Sha256::digest(&content), image)
    })
    .await
    .map_err(|e| TurnError::Internal(anyhow::anyhow!("hashing an attachment: {e}")))?;
    let sha256 = digest.iter().map(|b| format!("{b:02x}")).collect();
    let file = Attachment {
        path,
        bytes,
        sha256: Some(sha256),
    };
    Ok((file, image))
}

/// Refuses images a model cannot take, before anything is held or sent: 422
/// `model_cannot_see_images` naming the model, `too_many_images`, `image_too_large`.
pub fn check_images(
    model: &crate::catalogue::CatalogueModel,
    images: &[ImagePart],
) -> Result<(), TurnError> {
    if images.is_empty() {
        return Ok(());
    }
    if !model.takes_images() {
        return Err(TurnError::Attachment {
            code: "model_cannot_see_images",
            message: format!(
                "the model `{}` cannot see images; pick a model that reads images, or send \
                 the message without them",
                model.name
            ),
        });
    }
    if images.len() > model.max_images as usize {
        return Err(TurnError::Attachment {
            code: "too_many_images",
            message: format!(
                "the model `{}` takes at most {} images per message",
                model.name, model.max_images
            ),
        });
    }
    if let Some(big) = images.iter().find(|i| i.bytes > model.max_image_bytes) {
        return Err(TurnError::Attachment {
            code: "image_too_large",
            message: format!(
                "`{}` is larger than the {} the model `{}` takes per image",
                crate::llm::truncate_chars(&big.path, 120),
                attachment_note::human_bytes(model.max_image_bytes),
                model.name
            ),
        });
    }
    Ok(())
}

fn not_found(path: &str) -> TurnError {
    TurnError::Attachment {
        code: "attachment_not_found",
        message: format!(
            "`{}` is not in your workspace; upload it first",
            crate::llm::truncate_chars(path, 120)
        ),
    }
}

fn invalid(message: impl Into<String>) -> TurnError {
    TurnError::Attachment {
        code: "invalid_attachment",
        message: message.into(),
    }
}

/// What `messages.attachments` stores for these (NULL when none).
pub fn to_row(attachments: &[Attachment]) -> Option<Value> {
    if attachments.is_empty() {
        return None;
    }
    serde_json::to_value(attachments).ok()
}

/// A stored message's attachments (none when the column is NULL or unreadable).
pub fn of(message: &Message) -> Vec<Attachment> {
    from_column(message.attachments.clone())
}

/// The attachments an `attachments` column holds (none when NULL or unreadable).
pub fn from_column(column: Option<Value>) -> Vec<Attachment> {
    column
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// A user message's text as the model sees it: the text, then the note naming its files.
pub fn model_text(content: &str, attachments: &[Attachment]) -> String {
    attachment_note::append(
        content,
        attachments.iter().map(|a| (a.path.as_str(), a.bytes)),
    )
}

/// [`model_text`] of a stored message.
pub fn stored_model_text(message: &Message) -> String {
    if message.attachments.is_none() {
        return message.content.clone();
    }
    model_text(&message.content, &of(message))
}
