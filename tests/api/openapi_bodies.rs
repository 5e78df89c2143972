//! The OpenAPI description names every schema once and documents each route with the body its
//! handler reads (issue 42.4). utoipa keeps the last of two schemas of one name without a word,
//! which documented `POST /api/conversations` with the share-link body; so the names are
//! checked over every `ToSchema` type in the source, and each served request body against the
//! fields of the handler's own `Json<T>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agentchat_tests::*;
use serde_json::Value;

#[test]
fn every_schema_name_is_registered_by_one_type() {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in schema_names(&text) {
            by_name
                .entry(name)
                .or_default()
                .push(file.display().to_string());
        }
    }
    assert!(by_name.len() > 50, "the scan found too little: {by_name:?}");
    let dups: Vec<_> = by_name.iter().filter(|(_, f)| f.len() > 1).collect();
    assert!(dups.is_empty(), "schema names derived twice: {dups:?}");
}

#[tokio::test]
async fn every_route_documents_its_own_body() {
    let app = TestApp::builder().start().await;
    let doc: Value = app
        .client
        .get(app.url("/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut checked = 0;
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (method, path, body_type) in handlers_with_json_bodies(&text) {
            let op = &doc["paths"][&path][&method];
            assert!(op.is_object(), "{method} {path} is not described");
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            let mut refs = Vec::new();
            collect_refs(schema, &mut refs);
            assert_eq!(refs.len(), 1, "{method} {path}: body schema {schema}");
            let name = refs[0].rsplit('/').next().unwrap();
            let documented: BTreeSet<String> = doc["components"]["schemas"][name]["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path}: {name} has no properties"))
                .keys()
                .cloned()
                .collect();
            let read = struct_fields(&file, &text, &body_type);
            assert_eq!(
                documented, read,
                "{method} {path} is documented with `{name}` but its handler reads `{body_type}`"
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "the scan found too few bodies: {checked}");
}

fn rust_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The component name of each type deriving `ToSchema` in `text`: its own name, or for
/// `#[schema(as = a::B)]` utoipa's `a.B`.
fn schema_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[derive(") {
        rest = &rest[at + 9..];
        let derives = &rest[..rest.find(")]").unwrap()];
        let schema = derives
            .split(',')
            .any(|d| d.trim().rsplit("::").next() == Some("ToSchema"));
        if !schema {
            continue;
        }
        let (attrs, ident) = next_item(rest);
        let alias = attrs.split("#[schema(").skip(1).find_map(|a| {
            let a = &a[..a.find(")]").unwrap_or(a.len())];
            let v = a.split(',').find_map(|kv| kv.trim().strip_prefix("as"))?;
            Some(v.trim_start().strip_prefix('=')?.trim().replace("::", "."))
        });
        out.push(alias.unwrap_or(ident));
    }
    out
}

/// The attribute text before the next `struct`/`enum` line of `text`, and that item's name.
fn next_item(text: &str) -> (&str, String) {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = without_pub(line.trim_start());
        if let Some(r) = t.strip_prefix("struct ").or(t.strip_prefix("enum ")) {
            let ident: String = r
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return (&text[..offset], ident);
        }
        offset += line.len();
    }
    panic!("no item after a derive")
}

/// `(method, path, T)` of each `#[utoipa::path]` whose handler takes `Json<T>` (or
/// `JsonOrDefault<T>`).
fn handlers_with_json_bodies(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[utoipa::path(") {
        rest = &rest[at + 15..];
        let method = rest[..rest.find(',').unwrap()].trim().to_owned();
        let p = &rest[rest.find("path = \"").unwrap() + 8..];
        let path = p[..p.find('"').unwrap()].to_owned();
        let sig = &rest[rest.find("async fn ").unwrap()..];
        let sig = &sig[..sig.find('{').unwrap()];
        let body = ["JsonOrDefault<", "Json<"].iter().find_map(|k| {
            let t = &sig[sig.find(k)? + k.len()..];
            let t = t[..t.find('>').unwrap()].rsplit("::").next()?;
            Some(t.trim().to_owned())
        });
        if let Some(t) = body {
            out.push((method, path, t));
        }
    }
    out
}

/// The JSON field names of struct `name`: defined in the handler's file, else the only
/// definition anywhere in the server.
fn struct_fields(file: &Path, text: &str, name: &str) -> BTreeSet<String> {
    let head = format!("struct {name} {{");
    let found = if text.contains(&head) {
        text.to_owned()
    } else {
        let defs: Vec<String> = rust_files()
            .into_iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .filter(|t| t.contains(&head))
            .collect();
        assert_eq!(
            defs.len(),
            1,
            "{name} (read in {}) is defined {} times",
            file.display(),
            defs.len()
        );
        defs.into_iter().next().unwrap()
    };
    let body = &found[found.find(&head).unwrap() + head.len()..];
    let mut fields = BTreeSet::new();
    let (mut depth, mut rename, mut skip) = (0usize, None::<String>, false);
    for line in body.lines() {
        let t = line.trim();
        if depth == 0 && t.starts_with('}') {
            break;
        }
        if t.starts_with("#[serde(") {
            skip |= t.contains("skip)") || t.contains("skip,");
            assert!(
                !t.contains("flatten"),
                "{name}: flattened fields are not read here"
            );
            if let Some(r) = t.split("rename = \"").nth(1) {
                rename = Some(r[..r.find('"').unwrap()].to_owned());
            }
        } else if t.starts_with("//") {
            continue;
        } else if depth == 0 && !t.starts_with('#') {
            if let Some((ident, _)) = without_pub(t).split_once(':') {
                if !skip {
                    fields.insert(rename.take().unwrap_or_else(|| ident.trim().to_owned()));
                }
                (rename, skip) = (None, false);
            }
        }
        depth += t.matches(['{', '(', '[']).count();
        depth -= t.matches(['}', ')', ']']).count().min(depth);
    }
    fields
}

/// `t` without a leading `pub` or `pub(...)`.
fn without_pub(t: &str) -> &str {
    match t.strip_prefix("pub") {
        Some(r) if r.starts_with('(') => r[r.find(')').unwrap() + 1..].trim_start(),
        Some(r) if r.starts_with(' ') => r.trim_start(),
        _ => t,
    }
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r);
            }
            m.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}
