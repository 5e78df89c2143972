//! Assistants (issue 32, DESIGN §14): admins keep named, versioned presets; a chat with one
//! gets its instructions under the server's, its model and parameters, and only the tools
//! both it and the user's role allow — even when the model asks for another. Each is also a
//! model on `/v1` with its own usage line.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::knowledge_support::send;
use crate::openai_sdk::MODEL;

fn helper(instructions: &str, roles: &[&str]) -> Value {
    json!({
        "name": "helper", "description": "Sums things up", "instructions": instructions,
        "tools": ["calculator", "read_file", "http_get"], "params": {"temperature": 0.25},
        "visible_to_roles": roles,
    })
}

/// The tool names offered in a recorded upstream request.
fn offered(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["body"]["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn system_text(request: &Value) -> String {
    request["body"]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn an_assistant_narrows_tools_adds_its_instructions_and_is_versioned() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "ann"])
        .await;
    let (status, created) = send(
        &app,
        reqwest::Method::POST,
        &admin.access,
        "/api/admin/assistants",
        Some(helper("Answer like a pirate.", &["member"])),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["version"], 1);
    let id = created["id"].as_str().unwrap().to_owned();

    // The member sees what the assistant really gives them: http_get is admin-only.
    let (_, listed) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/assistants",
        None,
    )
    .await;
    assert_eq!(listed["items"][0]["name"], "helper", "{listed}");
    assert_eq!(
        listed["items"][0]["tools"],
        json!(["calculator", "read_file"])
    );

    let conv = app
        .create_conversation_with(&ann.access, json!({"assistant_id": id}))
        .await;
    let read = app.conversation(&ann.access, &conv).await;
    assert_eq!(read["assistant"]["name"], "helper", "{read}");
    // The model asks for a tool the role allows but the assistant does not.
    fake.push(Reply::tool_call("c1", "current_time", "{}"));
    fake.push(Reply::text("Arr, done."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "what time is it").await;
    let requests = fake.requests();
    let first = &requests[before];
    assert_eq!(offered(first), vec!["calculator", "read_file"]);
    let system = system_text(first);
    let rules = system
        .find("Answer like a pirate.")
        .expect("the instructions are in the prompt");
    assert!(rules > 0, "the server's prompt comes first: {system}");
    assert_eq!(first["body"]["temperature"], json!(0.25));
    let tool_result = requests[before + 1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(
        tool_result.contains("not_permitted") || tool_result.contains("not allowed"),
        "{tool_result}"
    );

    // A new version applies to the next message; the trail keeps both.
    let (status, v2) = send(
        &app,
        reqwest::Method::PUT,
        &admin.access,
        &format!("/api/admin/assistants/{id}"),
        Some(helper("Answer in haiku.", &["member"])),
    )
    .await;
    assert_eq!((status, v2["version"].clone()), (200, json!(2)), "{v2}");
    fake.push(Reply::text("Five seven five."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "hello").await;
    let system = system_text(&fake.requests()[before]);
    assert!(
        system.contains("Answer in haiku.") && !system.contains("pirate"),
        "{system}"
    );
    let (_, versions) = send(
        &app,
        reqwest::Method::GET,
        &admin.access,
        &format!("/api/admin/assistants/{id}/versions"),
        None,
    )
    .await;
    let numbers: Vec<i64> = versions["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, vec![2, 1]);
    assert_eq!(
        versions["items"][1]["instructions"],
        "Answer like a pirate."
    );
    let (_, changes) = send(
        &app,
        reqwest::Method::GET,
        &admin.access,
        "/api/admin/changes?kind=assistant.update",
        None,
    )
    .await;
    assert!(
        changes.to_string().contains("assistant.update"),
        "{changes}"
    );

    // Hidden from the member's role: not listed, no new chat, no new message in the old one.
    send(
        &app,
        reqwest::Method::PUT,
        &admin.access,
        &format!("/api/admin/assistants/{id}"),
        Some(helper("Answer in haiku.", &["admin"])),
    )
    .await;
    let (_, listed) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/assistants",
        None,
    )
    .await;
    assert_eq!(listed["items"], json!([]));
    let r = app
        .post_as(&ann.access, "/api/conversations")
        .json(&json!({"assistant_id": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = app.send_message(&ann.access, &conv, "still there?").await;
    expect_error(r, 409, "assistant_unavailable").await;

    // Retired: gone from the admin list, its trail kept.
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        &admin.access,
        &format!("/api/admin/assistants/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (_, all) = send(
        &app,
        reqwest::Method::GET,
        &admin.access,
        "/api/admin/assistants",
        None,
    )
    .await;
    assert_eq!(all["items"], json!([]));
    let (_, versions) = send(
        &app,
        reqwest::Method::GET,
        &admin.access,
        &format!("/api/admin/assistants/{id}/versions"),
        None,
    )
    .await;
    assert_eq!(versions["items"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn assistants_are_checked_and_only_admins_keep_them() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "ann"])
        .await;
    let post = |token: String, body: Value| {
        let app = &app;
        async move {
            send(
                app,
                reqwest::Method::POST,
                &token,
                "/api/admin/assistants",
                Some(body),
            )
            .await
        }
    };
    let (status, _) = post(ann.access.clone(), helper("x", &[])).await;
    assert_eq!(status, 403);
    let cases = [
        (
            json!({"name": "has/slash", "instructions": "x"}),
            422,
            "invalid_assistant",
        ),
        (
            json!({"name": "a", "instructions": ""}),
            422,
            "invalid_assistant",
        ),
        (
            json!({"name": "a", "instructions": "x", "params": {"temperature": 9}}),
            422,
            "invalid_assistant",
        ),
        (
            json!({"name": "a", "instructions": "x", "model": "nope"}),
            422,
            "unknown_model",
        ),
        (
            json!({"name": "a", "instructions": "x", "tools": ["rm_rf"]}),
            422,
            "unknown_tool",
        ),
        (
            json!({"name": "a", "instructions": "x", "visible_to_roles": ["ghosts"]}),
            422,
            "unknown_role",
        ),
        (
            json!({"name": "a", "instructions": "x", "collections": [uuid::Uuid::new_v4()]}),
            422,
            "unknown_collection",
        ),
        (
            json!({"name": "a", "instructions": "x", "surprise": 1}),
            400,
            "invalid_json",
        ),
    ];
    for (body, status, code) in cases {
        let (got, err) = post(admin.access.clone(), body.clone()).await;
        assert_eq!(
            (got, err["error"]["code"].as_str()),
            (status, Some(code)),
            "{body}: {err}"
        );
    }
    let (status, _) = post(admin.access.clone(), helper("x", &[])).await;
    assert_eq!(status, 201);
    let (status, err) = post(
        admin.access.clone(),
        json!({"name": "HELPER", "instructions": "y"}),
    )
    .await;
    assert_eq!(
        (status, err["error"]["code"].as_str()),
        (409, Some("assistant_exists"))
    );
}

#[tokio::test]
async fn an_assistant_is_a_model_on_v1_with_its_own_usage_line() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "ann"])
        .await;
    send(
        &app,
        reqwest::Method::POST,
        &admin.access,
        "/api/admin/assistants",
        Some(helper("Answer like a pirate.", &[])),
    )
    .await;
    send(
        &app,
        reqwest::Method::POST,
        &admin.access,
        "/api/admin/assistants",
        Some(json!({"name": "secret", "instructions": "x", "visible_to_roles": ["admin"]})),
    )
    .await;
    let (_, key) = send(
        &app,
        reqwest::Method::POST,
        &ann.access,
        "/api/keys",
        Some(json!({"name": "k"})),
    )
    .await;
    let key = key["key"].as_str().unwrap().to_owned();

    let (status, models) = send(&app, reqwest::Method::GET, &key, "/v1/models", None).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"assistant:helper") && !ids.contains(&"assistant:secret"),
        "{ids:?}"
    );

    fake.push(Reply::text("Ahoy."));
    let before = fake.requests().len();
    let (status, answer) = send(
        &app,
        reqwest::Method::POST,
        &key,
        "/v1/chat/completions",
        Some(json!({"model": "assistant:helper", "messages": [{"role": "user", "content": "hi"}]})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], "assistant:helper");
    assert_eq!(answer["choices"][0]["message"]["content"], "Ahoy.");
    let upstream = &fake.requests()[before];
    assert_eq!(upstream["body"]["model"], MODEL);
    assert!(system_text(upstream).contains("Answer like a pirate."));
    // The assistant ∩ the role ∩ the key's scopes: a chat-only key reaches no file tool.
    assert_eq!(offered(upstream), vec!["calculator"]);

    for hidden in ["assistant:secret", "assistant:nobody", "assistant:bad name"] {
        let (status, err) = send(
            &app,
            reqwest::Method::POST,
            &key,
            "/v1/chat/completions",
            Some(json!({"model": hidden, "messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
        assert_eq!(
            (status, err["error"]["code"].as_str()),
            (404, Some("model_not_found")),
            "{hidden}"
        );
    }
    let (_, report) = send(
        &app,
        reqwest::Method::GET,
        &admin.access,
        "/api/admin/usage",
        None,
    )
    .await;
    let line = &report["by_assistant"][0];
    assert_eq!(
        (line["assistant"].as_str(), line["calls"].as_i64()),
        (Some("helper"), Some(1)),
        "{report}"
    );
}
