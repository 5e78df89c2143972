//! The model catalogue (issue 30): two providers at once (an OpenAI and an Anthropic fake
//! upstream), models routed by public name to their upstream id, per-role model access on
//! both the browser API and `/v1`, prompt-cache accounting and cost in exact decimals.

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

/// `gpt` on the OpenAI fake (priced), `claude` on the Anthropic fake (priced, with cache
/// prices), `local` on the OpenAI fake (unpriced).
fn catalogue(
    openai: &FakeUpstream,
    anthropic: &FakeUpstream,
) -> impl FnOnce(&mut agentchat::config::Settings) {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": openai.base_url_openai(), "api_key": "sk-oa", "max_retries": 0},
        {"name": "an", "kind": "anthropic", "base_url": anthropic.base_url_anthropic(), "api_key": "sk-an", "max_retries": 0},
    ]);
    let models = json!([
        {"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o-2024-08-06", "context_window": 8000, "max_output": 300,
         "prices": [{"currency": "USD", "input": "2.5", "output": "10", "cache_read": "1.25"}]},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5-20250929", "context_window": 16000, "max_output": 500,
         "prices": [{"currency": "USD", "input": "3", "output": "15", "cache_read": "0.3", "cache_write": "3.75"}]},
        {"name": "local", "provider": "oa", "upstream_model": "llama-3.1-8b"},
    ]);
    move |s| {
        s.providers = serde_json::from_value(providers).unwrap();
        s.models = serde_json::from_value(models).unwrap();
    }
}

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn complete(app: &TestApp, bearer: &str, model: &str) -> (u16, Value) {
    json_of(
        app.client
            .post(app.url("/v1/chat/completions"))
            .bearer_auth(bearer)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn each_model_goes_to_its_provider_under_its_upstream_id_and_costs_its_price() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let app = TestApp::builder()
        .settings(catalogue(&openai, &anthropic))
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("uma").await;

    // The first model is the default; the catalogue lists all three for the member (`*`).
    let (status, models) = json_of(
        app.get_as(&user.access, "/api/models")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(models["default"], "gpt");
    assert_eq!(models["models"], json!(["gpt", "claude", "local"]));
    assert_eq!(models["details"][1]["kind"], "anthropic");
    assert_eq!(models["details"][1]["price"]["cache_write"], "3.75");
    assert_eq!(models["details"][2]["price"], Value::Null);

    // An Anthropic turn: 2000 prompt tokens of which 1500 read from the cache, 100 written.
    anthropic.push(Reply::Text {
        text: "from claude".into(),
        usage: Some(Usage {
            input_tokens: 2000,
            output_tokens: 40,
            cache_read_tokens: 1500,
            cache_write_tokens: 100,
        }),
    });
    let claude = app
        .post_as(&user.access, "/api/conversations")
        .json(&json!({"model": "claude"}))
        .send()
        .await
        .unwrap();
    let (status, claude) = json_of(claude).await;
    assert_eq!(status, 201);
    let events = app
        .chat(&user.access, claude["id"].as_str().unwrap(), "hello claude")
        .await;
    assert_eq!(streamed_text(&events), "from claude");
    let sent = anthropic.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["body"]["model"], "claude-sonnet-4-5-20250929");
    assert!(
        sent[0]["body"]["max_tokens"].as_u64().unwrap() <= 500,
        "{}",
        sent[0]["body"]["max_tokens"]
    );
    // The system prompt (and with it the tool specs before it) is a cache breakpoint.
    assert_eq!(
        sent[0]["body"]["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(sent[0]["headers"]["x-api-key"], "sk-an");
    assert_eq!(openai.request_count(), 0);

    // An OpenAI turn: 1000 prompt tokens of which 600 cached.
    openai.push(Reply::Text {
        text: "from gpt".into(),
        usage: Some(Usage {
            input_tokens: 1000,
            output_tokens: 20,
            cache_read_tokens: 600,
            cache_write_tokens: 0,
        }),
    });
    let gpt = app.new_conversation(&user.access).await;
    let events = app.chat(&user.access, &gpt, "hello gpt").await;
    assert_eq!(streamed_text(&events), "from gpt");
    assert_eq!(openai.requests()[0]["body"]["model"], "gpt-4o-2024-08-06");

    // Usage rows carry the split and the exact cost:
    // claude: 400 fresh * 3 + 1500 * 0.3 + 100 * 3.75 + 40 * 15 = 2625 micro-dollars;
    // gpt: 400 fresh * 2.5 + 600 * 1.25 + 20 * 10 = 1950 micro-dollars.
    let (status, report) = json_of(
        app.get_as(&admin.access, "/api/admin/usage?period=month")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{report}");
    let row = |model: &str| {
        report["by_user"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == model)
            .cloned()
            .unwrap_or_else(|| panic!("no {model} row in {report}"))
    };
    let c = row("claude");
    assert_eq!(
        (
            c["input_tokens"].as_i64(),
            c["cache_read_tokens"].as_i64(),
            c["cache_write_tokens"].as_i64()
        ),
        (Some(2000), Some(1500), Some(100))
    );
    assert_eq!(c["cost"], "0.002625000");
    assert_eq!(c["currency"], "USD");
    let g = row("gpt");
    assert_eq!(g["cache_read_tokens"], 600);
    assert_eq!(g["cost"], "0.001950000");

    // Prometheus sees the cache tokens and the cost.
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"agentchat_tokens_total{model="claude",type="cache_read"} 1500"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"agentchat_model_cost_total{currency="USD",model="claude"} 0.002625"#)
    );

    // The stored numbers are NUMERIC, not floats.
    let mut db = app.db().await;
    #[derive(diesel::QueryableByName)]
    struct Sum {
        #[diesel(sql_type = diesel::sql_types::Text)]
        total: String,
    }
    let sum: Sum = diesel::sql_query("SELECT sum(cost)::text AS total FROM usage_records")
        .get_result(&mut db)
        .await
        .unwrap();
    assert_eq!(sum.total, "0.004575000");
}

#[tokio::test]
async fn a_role_uses_only_the_models_it_lists_on_every_route() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let app = TestApp::builder()
        .settings(catalogue(&openai, &anthropic))
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("uma").await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "models": ["claude"]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "models": ["gone"]}),
        )
        .await;
    expect_error(r, 422, "unknown_model").await;

    // Only claude is listed, and it is the member's default.
    let (_, models) = json_of(
        app.get_as(&user.access, "/api/models")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(models["models"], json!(["claude"]));
    assert_eq!(models["default"], "claude");
    let (status, list) = json_of(
        app.client
            .get(app.url("/v1/models"))
            .bearer_auth(&user.access)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, ["claude"]);

    // Naming gpt is refused with the role named: conversation, patch, preference, /v1.
    let r = app
        .post_as(&user.access, "/api/conversations")
        .json(&json!({"model": "gpt"}))
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 403, "model_not_allowed").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`member`"),
        "{body}"
    );
    let id = app.new_conversation(&user.access).await;
    let r = app
        .patch_as(&user.access, &format!("/api/conversations/{id}"))
        .json(&json!({"model": "gpt"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "model_not_allowed").await;
    let r = app
        .patch_as(&user.access, "/api/me/preferences")
        .json(&json!({"default_model": "gpt"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "model_not_allowed").await;
    let (status, body) = complete(&app, &user.access, "gpt").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("member"),
        "{body}"
    );
    assert_eq!(openai.request_count(), 0);
    let (status, _) = complete(&app, &user.access, "no-such-model").await;
    assert_eq!(status, 404);

    // A conversation made while gpt was allowed is refused once the admin takes it away,
    // and nothing of the refused message is stored.
    app.put_role(
        &admin.access,
        "member",
        json!({"tools": [], "models": ["*"]}),
    )
    .await;
    let r = app
        .post_as(&user.access, "/api/conversations")
        .json(&json!({"model": "gpt"}))
        .send()
        .await
        .unwrap();
    let (_, gpt_chat) = json_of(r).await;
    app.put_role(
        &admin.access,
        "member",
        json!({"tools": [], "models": ["claude"]}),
    )
    .await;
    let r = app
        .send_message(&user.access, gpt_chat["id"].as_str().unwrap(), "still gpt?")
        .await;
    let body = expect_error(r, 403, "model_not_allowed").await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("`gpt`"),
        "{body}"
    );
    let stored = app
        .conversation(&user.access, gpt_chat["id"].as_str().unwrap())
        .await;
    assert_eq!(
        stored["messages"].as_array().map(Vec::len),
        Some(0),
        "{stored}"
    );
    assert_eq!(openai.request_count(), 0);

    // A role that lists no models (a new role: deny by default) may not chat at all.
    app.put_role(&admin.access, "guest", json!({"tools": []}))
        .await;
    let r = app
        .client
        .patch(app.url(&format!("/api/admin/users/{}", user.user_id)))
        .bearer_auth(&admin.access)
        .json(&json!({"role": "guest"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let guest = app.session_for("uma", "password-of-uma").await;
    let r = app
        .post_as(&guest.access, "/api/conversations")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "model_not_allowed").await;
}

#[test]
fn the_catalogue_file_is_validated_with_clear_messages() {
    let load = |toml: &str| {
        let path =
            std::env::temp_dir().join(format!("agentchat-catalogue-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&path, toml).unwrap();
        let loaded = agentchat::config::Settings::load_from(Some(&path), |_| None)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&path);
        loaded
    };
    let provider =
        "[[providers]]\nname = \"oa\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let ok = format!("{provider}[[models]]\nname = \"gpt\"\nprovider = \"oa\"\n[[models.prices]]\ninput = \"0.15\"\noutput = \"0.6\"\n");
    assert_eq!(load(&ok), Ok(()));
    let float = format!("{provider}[[models]]\nname = \"gpt\"\nprovider = \"oa\"\n[[models.prices]]\ninput = 0.15\noutput = \"0.6\"\n");
    assert!(load(&float)
        .unwrap_err()
        .contains("write prices as strings"));
    let orphan = format!("{provider}[[models]]\nname = \"gpt\"\nprovider = \"nope\"\n");
    assert!(load(&orphan)
        .unwrap_err()
        .contains("no provider named `nope`"));
    let fallback =
        format!("{provider}[[models]]\nname = \"gpt\"\nprovider = \"oa\"\nfallbacks = [\"gpt\"]\n");
    assert!(load(&fallback).unwrap_err().contains("its own fallback"));
    let negative = format!("{provider}[[models]]\nname = \"gpt\"\nprovider = \"oa\"\n[[models.prices]]\ninput = \"-1\"\noutput = \"1\"\n");
    assert!(load(&negative).unwrap_err().contains("cannot be negative"));
    assert!(load(provider).unwrap_err().contains("serve nothing"));
}
