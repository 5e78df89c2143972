//! Text as Postgres takes it.

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
