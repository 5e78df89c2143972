//! `GET /api/openapi.json`: the OpenAPI 3.1 description is served without auth, is
//! well-formed (every `$ref` and security scheme resolves, every path parameter is declared)
//! and describes exactly the routes the server registers (read from `server/src/routes`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentchat_tests::*;
use serde_json::Value;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

#[tokio::test]
async fn openapi_description_is_served_and_well_formed() {
    let app = TestApp::builder().start().await;
    let r = app
        .client
        .get(app.url("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let doc: Value = r.json().await.unwrap();

    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert!(!doc["info"]["title"].as_str().unwrap().is_empty());
    assert!(!doc["info"]["version"].as_str().unwrap().is_empty());
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    let error = &doc["components"]["schemas"]["ErrorBody"];
    assert_eq!(
        error["properties"]["error"]["$ref"],
        "#/components/schemas/ErrorDetail"
    );

    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external $ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {r}");
    }

    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            assert!(METHODS.contains(&method.as_str()), "{method} {path}");
            let responses = op["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{method} {path} has no responses");
            for code in responses.keys() {
                let n: u16 = code.parse().unwrap_or_else(|_| panic!("{code}"));
                assert!((100..600).contains(&n), "{method} {path}: {code}");
            }
            for req in op["security"].as_array().into_iter().flatten() {
                for name in req.as_object().unwrap().keys() {
                    assert!(schemes.contains_key(name), "{method} {path}: {name}");
                }
            }
            let declared: BTreeSet<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            assert_eq!(declared, template_names(path), "{method} {path}");
            let authed = op["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            if authed {
                assert!(responses.contains_key("401"), "{method} {path} lacks 401");
            }
            if path.starts_with("/api/admin/") {
                assert!(authed && responses.contains_key("403"), "{method} {path}");
            }
        }
    }
}

#[tokio::test]
async fn openapi_describes_every_registered_route() {
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
    let described: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    let registered = registered_routes();
    assert!(
        registered.len() >= 30,
        "the scan found too little: {registered:?}"
    );
    let missing: Vec<_> = registered.difference(&described).collect();
    assert!(
        missing.is_empty(),
        "routes not in the description: {missing:?}"
    );
    let invented: Vec<_> = described.difference(&registered).collect();
    assert!(
        invented.is_empty(),
        "described but not registered: {invented:?}"
    );
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

fn template_names(path: &str) -> BTreeSet<&str> {
    path.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name))
        .collect()
}

/// Every `(METHOD, path)` the route modules register, read from their `configure` functions
/// (the browser UI's catch-all in `web.rs` is not API).
fn registered_routes() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src");
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    for (dir, prefix) in [
        ("routes", "/api"),
        ("routes/admin", "/api/admin"),
        ("routes/openai", "/v1"),
    ] {
        for e in std::fs::read_dir(src.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            if p.extension().is_some_and(|x| x == "rs")
                && !["mod.rs", "web.rs"].contains(&name.as_str())
            {
                let prefix = if ["health.rs", "metrics.rs", "jwks.rs", "scim.rs"]
                    .contains(&name.as_str())
                    && dir == "routes"
                {
                    ""
                } else {
                    prefix
                };
                files.push((p, prefix));
            }
        }
    }
    // The document's own route, registered by startup at the top with its full path.
    files.push((src.join("openapi/mod.rs"), ""));
    let mut out = BTreeSet::new();
    for (file, prefix) in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let Some(start) = text.find("pub fn configure(") else {
            continue;
        };
        let body = &text[start..];
        let body = &body[..body.find("\n}\n").unwrap()];
        scan_configure(body, prefix, &mut out);
    }
    out
}

/// Walks `web::scope("..")`, `web::resource("..")`, `.route("..", web::m()` and
/// `.route(web::m()` in source order.
fn scan_configure(body: &str, prefix: &str, out: &mut BTreeSet<(String, String)>) {
    let mut scope = String::new();
    let mut resource = String::new();
    let mut rest = body;
    let patterns = [
        "web::scope(\"",
        "web::resource(\"",
        ".route(\"",
        ".route(web::",
    ];
    while let Some((at, pat)) = patterns
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, *p)))
        .min()
    {
        rest = &rest[at + pat.len()..];
        let quoted = || rest[..rest.find('"').unwrap()].to_owned();
        match pat {
            "web::scope(\"" => scope = quoted(),
            "web::resource(\"" => resource = quoted(),
            ".route(\"" => {
                let path = quoted();
                let after = &rest[rest.find("web::").unwrap() + 5..];
                let method = &after[..after.find('(').unwrap()];
                out.insert(route(method, prefix, &scope, &path));
            }
            _ => {
                let method = &rest[..rest.find('(').unwrap()];
                out.insert(route(method, prefix, &scope, &resource));
            }
        }
    }
}

/// `{path:.+}` (an actix pattern) is the parameter `{path}` in OpenAPI.
fn route(method: &str, prefix: &str, scope: &str, path: &str) -> (String, String) {
    let full = format!("{prefix}{scope}{path}");
    let mut clean = String::new();
    let mut in_regex = false;
    for c in full.chars() {
        match c {
            ':' if clean.rfind('{') > clean.rfind('}') => in_regex = true,
            '}' => {
                in_regex = false;
                clean.push(c);
            }
            _ if in_regex => {}
            _ => clean.push(c),
        }
    }
    (method.to_uppercase(), clean)
}
