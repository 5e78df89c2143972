//! The test infrastructure of knowledge: the fake upstream's OpenAI embeddings endpoint
//! (`POST /v1/embeddings`) and the Postgres with pgvector (`agentchat_tests::pgvector`).

use std::time::{Duration, Instant};

use agentchat::llm::demo_embed::{embed, DEMO_DIMENSIONS};
use agentchat_tests::fake_upstream::{fake_token_count, FakeUpstream};
use agentchat_tests::{pgvector, TestApp};
use base64::Engine;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{json, Value};

async fn post(fake: &FakeUpstream, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{}/embeddings", fake.base_url_openai()))
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn assert_openai_error(body: &Value) {
    let e = &body["error"];
    assert!(e["message"].is_string(), "{body}");
    assert!(e["type"].is_string(), "{body}");
    assert!(
        e.get("param").is_some() && e.get("code").is_some(),
        "{body}"
    );
}

#[tokio::test]
async fn fake_embeddings_speak_openai_wire_format() {
    let fake = FakeUpstream::start().await;

    // One string.
    let text = "What is the refund policy?";
    let (status, body) = post(
        &fake,
        json!({"model": "text-embedding-3-small", "input": text}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "text-embedding-3-small");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(data[0]["object"], "embedding");
    assert_eq!(data[0]["index"], 0);
    let v = floats(&data[0]["embedding"]);
    assert_eq!(v.len(), DEMO_DIMENSIONS);
    assert_eq!(v, embed(text, DEMO_DIMENSIONS));
    let tokens = fake_token_count(text);
    assert_eq!(tokens, 7, "26 characters: ceil(26 / 4)");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": tokens, "total_tokens": tokens})
    );

    // A batch, with `dimensions`, `user` and an explicit float encoding.
    let texts = ["alpha beta", "x", "refunds within thirty days"];
    let (status, body) = post(
        &fake,
        json!({"model": "m", "input": texts, "dimensions": 64, "encoding_format": "float", "user": "u1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, (d, t)) in data.iter().zip(texts).enumerate() {
        assert_eq!(d["index"], i);
        assert_eq!(floats(&d["embedding"]), embed(t, 64));
    }
    let tokens: usize = texts.iter().map(|t| fake_token_count(t)).sum();
    assert_eq!(tokens, 3 + 1 + 7);
    assert_eq!(body["usage"]["prompt_tokens"], tokens);
    assert_eq!(body["usage"]["total_tokens"], tokens);

    // base64: little-endian f32s, as the OpenAI SDKs ask by default.
    fake.set_embedding_dims(32);
    let (status, body) = post(
        &fake,
        json!({"model": "m", "input": ["gamma"], "encoding_format": "base64"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(body["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let v: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(v, embed("gamma", 32));

    // Malformed requests are refused as OpenAI does.
    for bad in [
        json!({"input": "no model"}),
        json!({"model": "m"}),
        json!({"model": "m", "input": ""}),
        json!({"model": "m", "input": []}),
        json!({"model": "m", "input": ["ok", ""]}),
        json!({"model": "m", "input": "x", "encoding_format": "int8"}),
        json!({"model": "m", "input": "x", "dimensions": 0}),
    ] {
        let (status, body) = post(&fake, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_openai_error(&body);
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }

    // Recorded apart from the chat requests.
    assert_eq!(fake.embedding_request_count(), 3 + 7);
    assert_eq!(fake.embedded_input_count(), 1 + 3 + 1);
    let recorded = fake.embedding_requests();
    assert_eq!(recorded.len(), 10);
    assert_eq!(recorded[0]["path"], "/v1/embeddings");
    assert_eq!(recorded[0]["headers"]["authorization"], "Bearer sk-test");
    assert_eq!(recorded[1]["body"]["input"], json!(texts));
    assert!(fake.requests().is_empty());
    assert_eq!(fake.request_count(), 0);
}

#[tokio::test]
async fn fake_embeddings_fail_delay_and_misbehave_on_request() {
    let fake = FakeUpstream::start().await;
    let ok = json!({"model": "m", "input": ["one", "two"]});

    fake.fail_embeddings(2, 429);
    for _ in 0..2 {
        let (status, body) = post(&fake, ok.clone()).await;
        assert_eq!(status, 429);
        assert_openai_error(&body);
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    }
    fake.fail_embeddings(1, 503);
    let (status, body) = post(&fake, ok.clone()).await;
    assert_eq!(status, 503);
    assert_eq!(body["error"]["type"], "server_error");
    let (status, _) = post(&fake, ok.clone()).await;
    assert_eq!(status, 200, "failures are used up");
    assert_eq!(fake.embedding_request_count(), 4);
    assert_eq!(fake.embedded_input_count(), 2);

    fake.embeddings_wrong_dims(Some(7));
    let (status, body) = post(&fake, ok.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(floats(&body["data"][1]["embedding"]).len(), 7);
    fake.embeddings_wrong_dims(None);
    let (_, body) = post(&fake, ok.clone()).await;
    assert_eq!(floats(&body["data"][1]["embedding"]).len(), DEMO_DIMENSIONS);

    fake.set_embedding_max_batch(Some(2));
    let (status, _) = post(&fake, ok.clone()).await;
    assert_eq!(status, 200, "two inputs are within a batch of two");
    let (status, body) = post(&fake, json!({"model": "m", "input": ["a", "b", "c"]})).await;
    assert_eq!(status, 400);
    assert_openai_error(&body);
    fake.set_embedding_max_batch(None);
    let many: Vec<String> = (0..2049).map(|i| format!("text {i}")).collect();
    let (status, _) = post(&fake, json!({"model": "m", "input": many})).await;
    assert_eq!(status, 400, "over OpenAI's own limit of 2048 inputs");

    fake.set_embedding_delay(Some(Duration::from_millis(300)));
    let started = Instant::now();
    let (status, _) = post(&fake, ok.clone()).await;
    assert_eq!(status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
    fake.set_embedding_delay(None);

    assert_eq!(fake.request_count(), 0, "chat requests are counted apart");
}

#[derive(diesel::QueryableByName)]
struct Distance {
    #[diesel(sql_type = diesel::sql_types::Double)]
    d: f64,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[tokio::test]
async fn pgvector_fresh_database_has_vector_and_migrations() {
    let guard = pgvector::fresh_database_guard().await;
    let mut db = AsyncPgConnection::establish(guard.url()).await.unwrap();
    let d: Distance =
        diesel::sql_query("SELECT ('[1,2]'::vector <=> '[2,1]'::vector)::float8 AS d")
            .get_result(&mut db)
            .await
            .unwrap();
    assert!((d.d - 0.2).abs() < 1e-6, "cosine distance {}", d.d);
    let migrations: Count =
        diesel::sql_query("SELECT count(*) AS n FROM __diesel_schema_migrations")
            .get_result(&mut db)
            .await
            .unwrap();
    assert!(migrations.n > 0);
}

#[tokio::test]
async fn a_server_on_pgvector_runs_and_its_database_goes_with_it() {
    let app = TestApp::builder().on_pgvector().start().await;
    let on = url::Url::parse(&app.database_url).unwrap();
    let cluster = url::Url::parse(&pgvector::url()).unwrap();
    assert_eq!(on.port(), cluster.port(), "{}", app.database_url);
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let name = on.path().trim_start_matches('/').to_owned();

    drop(app);
    let mut admin = AsyncPgConnection::establish(&pgvector::url_for("postgres").await)
        .await
        .unwrap();
    let left: Count = diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(&name)
        .get_result(&mut admin)
        .await
        .unwrap();
    assert_eq!(left.n, 0, "{name} is dropped with its last server");
}
