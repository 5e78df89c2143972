//! A `tools/call` result in our `{success, data, error}` envelope. Text is kept as text,
//! `structuredContent` as JSON; images, audio and embedded resources are summarised (their
//! bytes would only burn the model's context; an image kept as a file by [`super::images`]
//! is summarised by what was kept), resource links keep their URI.

use serde_json::{json, Map, Value};

use crate::tools::{truncate_chars, ToolError};

/// Longest embedded resource text kept inline (the registry's output cap applies after).
const MAX_RESOURCE_TEXT_CHARS: usize = 8_000;
/// Longest error text taken from an `isError` result.
const MAX_ERROR_CHARS: usize = 1_500;

/// Maps a result (as JSON, the wire shape) to the data the model sees, or the tool error.
///
/// `data` is the text when the result is one text block and nothing else; otherwise an object
/// with `structured` (the `structuredContent`) and/or `content` (the blocks, summarised).
pub fn map_result(result: &Value) -> Result<Value, ToolError> {
    map_result_with(result, &[])
}

/// [`map_result`] where the n-th image block is summarised by `images[n]` (what
/// [`super::images`] made of it) when there is one.
pub fn map_result_with(result: &Value, images: &[Value]) -> Result<Value, ToolError> {
    let mut images = images.iter();
    let blocks: Vec<Value> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("image") => images.next().cloned().unwrap_or_else(|| summarise_block(b)),
                    _ => summarise_block(b),
                })
                .collect()
        })
        .unwrap_or_default();
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or_else(|| b.as_str()))
            .collect();
        let message = if text.is_empty() {
            "the MCP tool reported an error".to_owned()
        } else {
            text.join("\n")
        };
        return Err(ToolError::Failed(truncate_chars(&message, MAX_ERROR_CHARS)));
    }
    if let (None, [Value::String(only)]) = (structured, blocks.as_slice()) {
        return Ok(Value::String(only.clone()));
    }
    let mut data = Map::new();
    if let Some(s) = structured {
        data.insert("structured".into(), s.clone());
    }
    // With structured content the text blocks usually repeat it as JSON: keep the rest only.
    let content: Vec<Value> = match structured {
        Some(_) => blocks.into_iter().filter(|b| !b.is_string()).collect(),
        None => blocks,
    };
    if !content.is_empty() || data.is_empty() {
        data.insert("content".into(), Value::Array(content));
    }
    Ok(Value::Object(data))
}

/// A text block becomes its string; everything else a small descriptive object.
fn summarise_block(block: &Value) -> Value {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |k: &str| block.get(k).and_then(Value::as_str);
    match kind {
        "text" => Value::String(str_of("text").unwrap_or("").to_owned()),
        "image" | "audio" => {
            let b64 = str_of("data").unwrap_or("");
            json!({
                "type": kind,
                "mime_type": str_of("mimeType"),
                "bytes": b64.len() / 4 * 3,
                "note": format!("{kind} content is not shown to the model"),
            })
        }
        "resource" => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let mut out = json!({
                "type": "resource",
                "uri": r.get("uri"),
                "mime_type": r.get("mimeType"),
            });
            if let Some(text) = r.get("text").and_then(Value::as_str) {
                out["text"] = Value::String(truncate_chars(text, MAX_RESOURCE_TEXT_CHARS));
            } else if let Some(blob) = r.get("blob").and_then(Value::as_str) {
                out["bytes"] = json!(blob.len() / 4 * 3);
            }
            out
        }
        "resource_link" => json!({
            "type": "resource_link",
            "uri": str_of("uri"),
            "name": str_of("name"),
            "mime_type": str_of("mimeType"),
            "description": str_of("description"),
        }),
        other => json!({"type": other, "note": "unsupported content type"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_text_is_the_data() {
        let r = json!({"content": [{"type": "text", "text": "12:00"}]});
        assert_eq!(map_result(&r).unwrap(), json!("12:00"));
    }

    #[test]
    fn structured_wins_and_duplicated_text_is_dropped() {
        let r = json!({
            "content": [{"type": "text", "text": "{\"t\":1}"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            "structuredContent": {"t": 1}
        });
        let d = map_result(&r).unwrap();
        assert_eq!(d["structured"], json!({"t": 1}));
        let content = d["content"].as_array().unwrap();
        assert_eq!(content.len(), 1);
        assert_eq!(content[0]["type"], "image");
        assert_eq!(content[0]["bytes"], 3);
        assert!(content[0].get("data").is_none());
    }

    #[test]
    fn kept_images_stand_for_their_blocks_in_order() {
        let r = json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "between"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA", "mimeType": "image/gif"}
        ]});
        let kept = [
            json!({"type": "image", "path": "a.png"}),
            json!({"type": "image", "note": "no"}),
        ];
        let d = map_result_with(&r, &kept).unwrap();
        let c = d["content"].as_array().unwrap();
        assert_eq!(
            (&c[0], &c[1], &c[2]),
            (&kept[0], &json!("between"), &kept[1])
        );
        // A block nothing was kept for is summarised, its bytes left out.
        assert_eq!(c[3]["mime_type"], "image/gif");
        assert!(c[3].get("data").is_none());
    }

    #[test]
    fn resources_are_summarised() {
        let r = json!({"content": [
            {"type": "text", "text": "see"},
            {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAAAAAA"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"}
        ]});
        let d = map_result(&r).unwrap();
        let c = d["content"].as_array().unwrap();
        assert_eq!(c[0], "see");
        assert_eq!(c[1]["text"], "hello");
        assert_eq!(c[2]["bytes"], 6);
        assert_eq!(c[3]["uri"], "file:///c");
    }

    #[test]
    fn is_error_is_a_failure_with_the_text() {
        let r = json!({"isError": true, "content": [{"type": "text", "text": "no such city"}]});
        assert_eq!(
            map_result(&r).unwrap_err(),
            ToolError::Failed("no such city".into())
        );
        let r = json!({"isError": true, "content": []});
        assert!(map_result(&r)
            .unwrap_err()
            .to_string()
            .contains("reported an error"));
    }

    #[test]
    fn empty_result_is_an_empty_content_list() {
        assert_eq!(map_result(&json!({})).unwrap(), json!({"content": []}));
    }
}
