//! Text as Postgres takes it: what comes from outside is checked for what Postgres refuses
//! (a NUL character) and refused with the field named; what the server itself writes from
//! elsewhere (a model's output) is made safe instead.

use std::borrow::Cow;

/// Postgres text and jsonb cannot hold NUL characters; hostile or broken model output may
/// contain them, so they are replaced (U+FFFD) at the database boundary instead of failing
/// the write.
pub fn pg_safe_text(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// [`pg_safe_text`] for every string (and key) inside a JSON value.
pub fn pg_safe_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(pg_safe_text(s).into_owned()),
        Value::Array(a) => Value::Array(a.iter().map(pg_safe_json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (pg_safe_text(k).into_owned(), pg_safe_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The first place in a JSON value holding a NUL character, which Postgres text and jsonb
/// refuse: its path (`messages[2].content`, `.` for the value itself, a key's own path for a
/// key). Every request body is checked with this before it is used ([`crate::extract`]).
pub fn nul_in_json(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    fn walk(v: &Value, path: &mut String) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(map) => map.iter().any(|(k, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&k.replace('\0', "\\u0000"));
                let found = k.contains('\0') || walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(v, &mut path).then(|| if path.is_empty() { ".".into() } else { path })
}

/// Whether a raw JSON body may hold a NUL character: only as the escape `\u0000` (a raw
/// control character is not JSON). A cheap scan that lets every other body skip the walk.
pub fn may_hold_nul(body: &[u8]) -> bool {
    body.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\u0000"))
}

/// The first parameter of a query string whose name or value decodes to a NUL character.
pub fn nul_in_query(query: &str) -> Option<String> {
    if !query.contains("%00") {
        return None;
    }
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        .map(|(k, _)| k.replace('\0', "\\u0000"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_characters_are_found_and_named() {
        assert_eq!(
            nul_in_json(&json!({"a": "ok", "b": ["x", "y\u{0}"]})).as_deref(),
            Some("b[1]")
        );
        assert_eq!(
            nul_in_json(&json!({"o": {"k\u{0}": 1}})).as_deref(),
            Some("o.k\\u0000")
        );
        assert_eq!(nul_in_json(&json!("\u{0}")).as_deref(), Some("."));
        assert_eq!(nul_in_json(&json!({"a": "fine", "n": 1})), None);
        assert!(may_hold_nul(br#"{"a": "\u0000"}"#));
        assert!(!may_hold_nul(br#"{"a": "u0000"}"#));
        assert_eq!(nul_in_query("a=1&kind=x%00y").as_deref(), Some("kind"));
        assert_eq!(nul_in_query("a=1&b=%0"), None);
    }
}
