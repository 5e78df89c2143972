//! What the knowledge tests share: an app on the pgvector cluster whose embedding model is
//! the fake upstream's `/v1/embeddings`, and small API helpers.

use std::time::Duration;

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use serde_json::{json, Value};

/// The builder for an app on pgvector, chatting with and embedding through `fake`.
pub fn on_fake(fake: &FakeUpstream) -> AppBuilder<'static> {
    TestApp::builder().on_pgvector().openai(fake).settings(|s| {
        s.embedding_models = serde_json::from_value(json!([{
            "name": "embed", "provider": "default",
            "upstream_model": "text-embedding-3-small", "dimensions": 256,
            "price_input": "0.02"
        }]))
        .unwrap();
        s.knowledge.embedding_model = "embed".into();
        s.knowledge.chunk_tokens = 60;
        s.knowledge.chunk_overlap_tokens = 10;
        s.knowledge.embed_batch = 4;
        // The fake's vectors are feature hashes: a lone shared hash bucket is noise.
        s.knowledge.min_similarity = 0.5;
    })
}

pub async fn send(
    app: &TestApp,
    method: reqwest::Method,
    token: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// A new collection of `token`'s; returns its id.
pub async fn collection(app: &TestApp, token: &str, name: &str) -> String {
    let (status, c) = send(
        app,
        reqwest::Method::POST,
        token,
        "/api/collections",
        Some(json!({ "name": name })),
    )
    .await;
    assert_eq!(status, 201, "{c}");
    c["id"].as_str().unwrap().to_owned()
}

/// Uploads `bytes` as `name`; returns the status and the answer.
pub async fn upload(
    app: &TestApp,
    token: &str,
    collection: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let r = app
        .client
        .put(app.url(&format!("/api/collections/{collection}/files/{name}")))
        .bearer_auth(token)
        .body(bytes)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The collection's file `name` once its state is no longer in progress (panics after 60 s).
pub async fn settled(app: &TestApp, token: &str, collection: &str, name: &str) -> Value {
    for _ in 0..600 {
        let (_, c) = send(
            app,
            reqwest::Method::GET,
            token,
            &format!("/api/collections/{collection}"),
            None,
        )
        .await;
        if let Some(f) = c["files"]
            .as_array()
            .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        {
            if f["state"] == "ready" || f["state"] == "failed" {
                return f.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} did not settle");
}

/// The search the tool runs, through `GET /api/knowledge/search`.
pub async fn search(app: &TestApp, token: &str, q: &str, k: usize) -> Vec<Value> {
    let r = app
        .client
        .get(app.url("/api/knowledge/search"))
        .query(&[("q", q), ("k", &k.to_string())])
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(status, 200, "search {q:?}: {v}");
    v["results"].as_array().unwrap().clone()
}

#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = diesel::sql_types::Text)]
    v: String,
}

/// One text column of each row of `sql`.
pub async fn strings(app: &TestApp, sql: &str) -> Vec<String> {
    use diesel_async::RunQueryDsl;
    let mut db = app.db().await;
    diesel::sql_query(sql)
        .load::<Row>(&mut db)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.v)
        .collect()
}
