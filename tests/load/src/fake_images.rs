//! What the fake upstream notes about the images it is sent: the text beside them (where
//! the directive is), how many `image_url` parts came, their bytes, and a digest of each
//! part's URL, so the kit can tell that every image that reached the model was the very
//! file it uploaded once (the server resized it then, and sends the stored bytes as they are).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

/// Most distinct digests kept (then `other`).
const MAX_DIGESTS: usize = 64;

/// A digest of an image part's URL: the same in the fake upstream and in the kit (one
/// binary, so one hasher), to compare what reached the model with what the kit uploaded.
pub fn digest(url: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    url.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// A message's text: the string, or its text parts joined (OpenAI's array of parts).
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The image parts seen so far.
#[derive(Default)]
pub struct Counter {
    parts: AtomicU64,
    /// Bytes of the parts' URLs (base64 data URLs: ~4/3 of the image).
    bytes: AtomicU64,
    digests: Mutex<BTreeMap<String, u64>>,
}

impl Counter {
    /// Counts the `image_url` parts of every message.
    pub fn count(&self, messages: &[Value]) {
        for m in messages {
            let Some(parts) = m.get("content").and_then(Value::as_array) else {
                continue;
            };
            for p in parts {
                if p.get("type").and_then(Value::as_str) != Some("image_url") {
                    continue;
                }
                let url = p["image_url"]["url"].as_str().unwrap_or("");
                self.parts.fetch_add(1, Ordering::Relaxed);
                self.bytes.fetch_add(url.len() as u64, Ordering::Relaxed);
                if let Ok(mut d) = self.digests.lock() {
                    let key = digest(url);
                    if let Some(n) = d.get_mut(&key) {
                        *n += 1;
                    } else if d.len() < MAX_DIGESTS {
                        d.insert(key, 1);
                    } else {
                        *d.entry("other".to_owned()).or_insert(0) += 1;
                    }
                }
            }
        }
    }

    /// `{parts, bytes, digests: {digest: parts}}` for `GET /control/stats`.
    pub fn stats(&self) -> Value {
        json!({
            "parts": self.parts.load(Ordering::Relaxed),
            "bytes": self.bytes.load(Ordering::Relaxed),
            "digests": self.digests.lock().map(|d| d.clone()).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::Directive;

    #[test]
    fn the_directive_is_read_from_text_parts_beside_an_image_and_the_image_counted() {
        let d = Directive {
            n: 3,
            ..Default::default()
        };
        let url = "data:image/jpeg;base64,AAAA";
        let content = json!([
            {"type": "text", "text": format!("hello {}", d.render())},
            {"type": "image_url", "image_url": {"url": url}},
        ]);
        assert_eq!(Directive::parse(&text_of(&content)), d);
        let c = Counter::default();
        c.count(&[json!({"role": "user", "content": content})]);
        let s = c.stats();
        assert_eq!(
            (s["parts"].as_u64(), s["bytes"].as_u64()),
            (Some(1), Some(url.len() as u64))
        );
        assert_eq!(s["digests"][digest(url)], 1);
        assert_ne!(digest(url), digest("data:image/jpeg;base64,AAAB"));
    }
}
