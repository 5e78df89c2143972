//! Images of earlier messages, sent again: a model that reads images is shown the images
//! of the history it is given (a user's image attachments; the images a tool of this
//! conversation saved, as its stored result lists them), so "what was in the first
//! picture?" can be answered. They are re-read from the workspace as stored (normalised
//! once at upload, never decoded here) and checked against what the message recorded: a
//! file changed or removed since is named, not shown. Bounded like the new message's
//! images: newest first, the model's `max_images` per request in all (the new message's
//! count) and its `max_image_bytes` each; the rest are named. Nothing is read for a
//! history without images, nor for a model that does not read them.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::catalogue::CatalogueModel;
use crate::db::models::message::Message;
use crate::domain::MessageRole;
use crate::files::{WorkspaceError, WorkspaceStore};
use crate::llm::image_part::is_image_path;
use crate::llm::{ChatMessage, ImagePart};

/// What the history's messages carry again, by stored message id.
#[derive(Debug, Default)]
pub struct Earlier {
    by_message: HashMap<Uuid, Carried>,
}

/// One message's images: those shown, and those named instead with why.
#[derive(Debug, Default)]
struct Carried {
    images: Vec<ImagePart>,
    named: Vec<(String, Why)>,
}

/// Why an earlier image is named rather than shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Changed,
    Gone,
    Unreadable,
    OverLimits,
}

impl Why {
    fn says(self) -> &'static str {
        match self {
            Why::Changed => "changed since it was sent",
            Why::Gone => "no longer in the workspace",
            Why::Unreadable => "not readable as an image",
            Why::OverLimits => "over the model's image limits",
        }
    }
}

/// An image an earlier message carried, as the message recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    message: Uuid,
    path: String,
    /// Its size when it was recorded (0: not recorded).
    bytes: u64,
    sha256: Option<String>,
}

impl Earlier {
    /// Gives `message` (the model's view of the stored message `id`) its images, and a note
    /// naming those it does not get again.
    pub(super) fn give(&self, id: Uuid, message: &mut ChatMessage) {
        let Some(carried) = self.by_message.get(&id) else {
            return;
        };
        message.images.extend(carried.images.iter().cloned());
        if !carried.named.is_empty() {
            let named: Vec<String> = carried
                .named
                .iter()
                .map(|(path, why)| format!("{path} ({})", why.says()))
                .collect();
            message.content.push_str(&format!(
                "\n\n(Images of this message not shown to you again: {}.)",
                named.join("; ")
            ));
        }
    }
}

/// The images `history` carried (newest message first; a message's own in their order).
fn wanted(history: &[Message]) -> Vec<Wanted> {
    let mut out = Vec::new();
    for m in history.iter().rev() {
        match m.role {
            MessageRole::User if m.attachments.is_some() => {
                out.extend(
                    crate::turn::attachments::of(m)
                        .into_iter()
                        .filter(|a| is_image_path(&a.path))
                        .map(|a| Wanted {
                            message: m.id,
                            path: a.path,
                            bytes: a.bytes,
                            sha256: a.sha256,
                        }),
                );
            }
            // A stored result is the tool output's JSON; only one listing files is parsed.
            MessageRole::Tool if m.content.contains("\"files\"") => {
                let Ok(output) = serde_json::from_str::<Value>(&m.content) else {
                    continue;
                };
                out.extend(
                    crate::turn::tool_images::listed_in(output.get("data"), m.conversation_id)
                        .into_iter()
                        .map(|l| Wanted {
                            message: m.id,
                            path: l.path,
                            bytes: l.bytes,
                            sha256: l.sha256,
                        }),
                );
            }
            _ => {}
        }
    }
    out
}

/// The images of `history` that a request to `model` carrying `current` images of its own
/// shows again, read from `user`'s workspace: the newest first, as many as the model takes
/// (several read at once; one that cannot be shown leaves its place to an older one).
pub async fn read(
    store: &WorkspaceStore,
    user: Uuid,
    model: &CatalogueModel,
    history: &[Message],
    current: usize,
) -> Earlier {
    let mut out = Earlier::default();
    if !model.takes_images() {
        return out;
    }
    let mut room = (model.max_images as usize).saturating_sub(current);
    let named = |out: &mut Earlier, w: Wanted, why: Why| {
        out.by_message
            .entry(w.message)
            .or_default()
            .named
            .push((w.path, why));
    };
    let mut queue = wanted(history).into_iter();
    while room > 0 {
        let mut batch = Vec::new();
        for w in queue.by_ref() {
            if w.bytes > model.max_image_bytes {
                named(&mut out, w, Why::OverLimits);
                continue;
            }
            batch.push(w);
            if batch.len() == room {
                break;
            }
        }
        if batch.is_empty() {
            break;
        }
        let loaded =
            futures_util::future::join_all(batch.iter().map(|w| load(store, user, w, model))).await;
        for (w, got) in batch.into_iter().zip(loaded) {
            match got {
                Ok(image) => {
                    room -= 1;
                    out.by_message
                        .entry(w.message)
                        .or_default()
                        .images
                        .push(image);
                }
                Err(why) => named(&mut out, w, why),
            }
        }
    }
    for w in queue {
        named(&mut out, w, Why::OverLimits);
    }
    out
}

/// `w` as it is in the workspace now, for `model`: the very file recorded (by digest when
/// one was recorded, else by size), an image, within the model's bytes per image.
async fn load(
    store: &WorkspaceStore,
    user: Uuid,
    w: &Wanted,
    model: &CatalogueModel,
) -> Result<ImagePart, Why> {
    let content = store.read(user, &w.path).await.map_err(|e| match e {
        WorkspaceError::NotFound => Why::Gone,
        _ => Why::Unreadable,
    })?;
    let (path, sha256, recorded) = (w.path.clone(), w.sha256.clone(), w.bytes);
    // Hashing and base64 of up to `max_image_bytes`: off the async workers.
    let image = tokio::task::spawn_blocking(move || {
        let same = match &sha256 {
            Some(want) => hex(&Sha256::digest(&content)) == want.to_ascii_lowercase(),
            None => recorded == 0 || recorded == content.len() as u64,
        };
        if !same {
            return Err(Why::Changed);
        }
        ImagePart::read(&path, &content).ok_or(Why::Unreadable)
    })
    .await
    .map_err(|_| Why::Unreadable)??;
    if image.bytes > model.max_image_bytes {
        return Err(Why::OverLimits);
    }
    Ok(image.for_provider(model.kind))
}

#[cfg(test)]
impl Earlier {
    /// The message `id` carrying `images` again.
    pub(super) fn showing(id: Uuid, images: Vec<ImagePart>) -> Self {
        let carried = Carried {
            images,
            named: Vec::new(),
        };
        Self {
            by_message: HashMap::from([(id, carried)]),
        }
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::MessageStatus;
    use serde_json::json;

    fn stored(role: MessageRole, content: &str, attachments: Option<Value>) -> Message {
        Message {
            id: Uuid::new_v4(),
            seq: 0,
            conversation_id: Uuid::from_u128(9),
            role,
            content: content.into(),
            tool_calls: None,
            tool_call_id: Some("t".into()),
            attachments,
            citations: None,
            status: MessageStatus::Complete,
            status_reason: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            duration_ms: None,
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn wanted_newest_first_from_attachments_and_this_conversations_tool_outputs() {
        let c = Uuid::from_u128(9);
        let first = stored(
            MessageRole::User,
            "look",
            Some(json!([
                {"path": "a.png", "bytes": 3, "sha256": "aa"},
                {"path": "notes.txt", "bytes": 4},
                {"path": "b.jpg", "bytes": 5},
            ])),
        );
        let output = json!({"success": true, "data": {"files": [
            {"path": format!("outputs/{c}/chart.png"), "mime": "image/png", "bytes": 6},
            {"path": "uploads/secret.png", "mime": "image/png", "bytes": 7},
        ]}});
        let tool = stored(MessageRole::Tool, &output.to_string(), None);
        let plain = stored(MessageRole::User, "no files", None);
        let got: Vec<(Uuid, String, u64)> = wanted(&[first.clone(), tool.clone(), plain])
            .into_iter()
            .map(|w| (w.message, w.path, w.bytes))
            .collect();
        assert_eq!(
            got,
            [
                (tool.id, format!("outputs/{c}/chart.png"), 6),
                (first.id, "a.png".into(), 3),
                (first.id, "b.jpg".into(), 5),
            ]
        );
        let unlisted = stored(MessageRole::Tool, r#"{"data":{"text":"files"}}"#, None);
        assert!(wanted(&[unlisted]).is_empty());
    }

    #[test]
    fn named_images_are_said_after_the_text() {
        let id = Uuid::new_v4();
        let mut earlier = Earlier::default();
        earlier.by_message.insert(
            id,
            Carried {
                images: Vec::new(),
                named: vec![("a.png".into(), Why::Changed), ("b.png".into(), Why::Gone)],
            },
        );
        let mut m = ChatMessage::user("look");
        earlier.give(id, &mut m);
        assert_eq!(
            m.content,
            "look\n\n(Images of this message not shown to you again: a.png (changed since it \
             was sent); b.png (no longer in the workspace).)"
        );
        let mut other = ChatMessage::user("other");
        earlier.give(Uuid::new_v4(), &mut other);
        assert_eq!(other.content, "other");
    }
}
