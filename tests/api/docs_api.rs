//! `docs/api.md` names every route of `GET /api/openapi.json` and no route the server does not
//! have (issue 42.6), as `config::tests` keeps the README's settings table in step with the
//! settings; `openapi::` holds the description to the routes the server registers.

use std::collections::BTreeSet;
use std::path::Path;

use agentchat_tests::*;
use serde_json::Value;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

#[tokio::test]
async fn docs_api_names_every_route_and_only_those() {
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
    let served: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            let path = unnamed_params(path);
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api.md");
    let named = named_routes(&std::fs::read_to_string(file).unwrap());
    assert!(served.len() >= 100, "{served:?}");
    let missing: Vec<_> = served.difference(&named).collect();
    assert!(
        missing.is_empty(),
        "routes docs/api.md leaves out: {missing:?}"
    );
    let invented: Vec<_> = named.difference(&served).collect();
    assert!(
        invented.is_empty(),
        "docs/api.md names routes the server does not have: {invented:?}"
    );
}

#[test]
fn named_routes_reads_the_forms_the_doc_uses() {
    let text = "- `GET|DELETE\n  /api/x/{id}?a=` and `POST /api/y {b}`, then `GET /healthz`: \
                but not `GET .../z` nor GET of /w.";
    let want: BTreeSet<(String, String)> = [
        ("GET", "/api/x/{}"),
        ("DELETE", "/api/x/{}"),
        ("POST", "/api/y"),
        ("GET", "/healthz"),
    ]
    .iter()
    .map(|(m, p)| (m.to_string(), p.to_string()))
    .collect();
    assert_eq!(named_routes(text), want);
}

/// `(METHOD, path)` of each `METHOD /path` (or `GET|PUT /path`) in `text`, whitespace (a line
/// break too) between the two; the path without its query, its parameters written `{}`.
fn named_routes(text: &str) -> BTreeSet<(String, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = BTreeSet::new();
    for pair in words.windows(2) {
        let methods: Vec<&str> = pair[0].trim_start_matches(['`', '(']).split('|').collect();
        if !methods.iter().all(|m| METHODS.contains(m)) || !pair[1].starts_with('/') {
            continue;
        }
        let path = pair[1];
        let path = &path[..path.find(['`', '?', ',', ')', ';']).unwrap_or(path.len())];
        let path = unnamed_params(path.trim_end_matches(['.', ':']));
        for m in methods {
            out.insert((m.to_owned(), path.clone()));
        }
    }
    out
}

/// `/a/{id}/b/{name}` as `/a/{}/b/{}`: the doc and the description may name them apart.
fn unnamed_params(path: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in path.chars() {
        match c {
            '{' => inside = true,
            '}' => {
                inside = false;
                out.push_str("{}");
            }
            _ if !inside => out.push(c),
            _ => {}
        }
    }
    out
}
