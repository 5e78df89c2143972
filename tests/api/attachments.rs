//! Files attached to a message (issue 22 item 3): checked against the sender's own
//! workspace, stored with the message, named to the model (which reads them with its file
//! tools), kept in exports and part of the Idempotency-Key's request.

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

fn openai_app(fake: &FakeUpstream) -> AppBuilder<'_> {
    TestApp::builder().openai(fake).model("fake-model")
}

fn answer(text: &str) -> Reply {
    Reply::Text {
        text: text.into(),
        usage: Some(Usage::new(10, 5)),
    }
}

async fn send(
    app: &TestApp,
    token: &str,
    conv: &str,
    body: Value,
    key: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .post_as(token, &format!("/api/conversations/{conv}/messages"))
        .json(&body);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    req.send().await.unwrap()
}

/// The content of the last user message of the `n`th model request.
fn asked(fake: &FakeUpstream, n: usize) -> String {
    let body = &fake.requests()[n]["body"];
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap()
}

/// SHA-256 of the two files' contents, as the message records them (issue 41.6).
const NOTES_SHA256: &str = "e42c00ea657164ba1ce3819988604d590830ab6f4e440e591e2a0f0539abe38f";
const CSV_SHA256: &str = "492d5ea496056f1a6a6592241032fab764c321596317930b4fa0e1e8bc3b7470";

const NOTE: &str = "Attached files in your workspace (read them with your file tools):";

#[tokio::test]
async fn attached_files_are_stored_named_to_the_model_and_exported() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(answer("noted").into()));
    let (app, [s]) = openai_app(&fake).start_as(["attacher"]).await;
    app.upload(&s.access, "notes.txt", "Quarterly plan\nship it\n")
        .await;
    app.upload(&s.access, "data/q (2).csv", "a,b\n1,2\n").await;
    let conv = app.new_conversation(&s.access).await;

    let body = json!({"content": "What is in these?", "attachments": ["notes.txt", "data/q (2).csv", "notes.txt"]});
    let r = send(&app, &s.access, &conv, body, None).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let events = parse_sse(&r.text().await.unwrap());
    assert_eq!(events.last().unwrap().event, "done");
    // The model reads the text, then the note naming each file once, with its size.
    assert_eq!(
        asked(&fake, 0),
        format!("What is in these?\n\n{NOTE}\n- notes.txt (23 bytes)\n- data/q (2).csv (8 bytes)")
    );

    // Stored with the message (and shown again after a reload), the text as it was typed.
    let stored = app.conversation(&s.access, &conv).await;
    let user = &stored["messages"][0];
    assert_eq!(user["content"], "What is in these?");
    assert_eq!(
        user["attachments"],
        json!([
            {"path": "notes.txt", "bytes": 23, "sha256": NOTES_SHA256},
            {"path": "data/q (2).csv", "bytes": 8, "sha256": CSV_SHA256}
        ])
    );
    assert!(
        stored["messages"][1].get("attachments").is_none(),
        "{stored}"
    );

    // A later turn sends the history with the note still there; files alone are a message.
    let r = send(
        &app,
        &s.access,
        &conv,
        json!({"content": "", "attachments": ["notes.txt"]}),
        None,
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let _ = r.text().await;
    let second = &fake.requests()[1]["body"]["messages"];
    let first_question = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert!(
        first_question["content"]
            .as_str()
            .unwrap()
            .ends_with("- data/q (2).csv (8 bytes)"),
        "{second}"
    );
    assert_eq!(asked(&fake, 1), format!("{NOTE}\n- notes.txt (23 bytes)"));

    // Both exports carry them.
    let md = app
        .get_as(&s.access, &format!("/api/conversations/{conv}/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        md.contains(
            "What is in these?\n\n_Attached:_ `notes.txt` (23 bytes), `data/q (2).csv` (8 bytes)"
        ),
        "{md}"
    );
    let doc: Value = app
        .get_as(
            &s.access,
            &format!("/api/conversations/{conv}/export?format=json"),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        doc["messages"][2]["attachments"],
        json!([{"path": "notes.txt", "bytes": 23, "sha256": NOTES_SHA256}])
    );
    assert_eq!(doc["messages"][2]["content"], "");
}

#[tokio::test]
async fn only_existing_files_of_the_senders_own_workspace_can_be_attached() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(answer("noted").into()));
    let (app, [victim, thief]) = openai_app(&fake).start_as(["victim", "thief"]).await;
    app.upload(&victim.access, "secret.txt", "the plans").await;
    app.upload(&thief.access, "mine.txt", "mine").await;
    let conv = app.new_conversation(&thief.access).await;

    let refused = [
        (json!(["secret.txt"]), 422, "attachment_not_found"),
        (json!(["mine.txt", "gone.txt"]), 422, "attachment_not_found"),
        (
            json!([format!("../{}/secret.txt", victim.user_id)]),
            422,
            "invalid_attachment",
        ),
        (json!(["/etc/passwd"]), 422, "invalid_attachment"),
        // Text Postgres cannot hold is refused before anything reads it (issue 29).
        (json!(["a\u{0}b"]), 400, "invalid_text"),
        (json!(["x".repeat(2000)]), 422, "invalid_attachment"),
        (json!(vec!["mine.txt"; 11]), 422, "too_many_attachments"),
    ];
    for (attachments, status, code) in refused {
        let body = json!({"content": "read it", "attachments": attachments});
        let err = expect_error(
            send(&app, &thief.access, &conv, body, None).await,
            status,
            code,
        )
        .await;
        assert!(
            !err.to_string().contains("the plans") && !err.to_string().contains("/tmp/"),
            "{err}"
        );
    }
    // Nothing was stored or asked for any of them.
    assert_eq!(fake.request_count(), 0);
    let stored = app.conversation(&thief.access, &conv).await;
    assert_eq!(stored["messages"], json!([]), "{stored}");
    // No text and no files is still no message.
    let body = json!({"content": " ", "attachments": []});
    expect_error(
        send(&app, &thief.access, &conv, body, None).await,
        400,
        "invalid_content",
    )
    .await;
    // Unknown fields are still refused; a path list of the wrong shape too.
    let body = json!({"content": "x", "attachments": "mine.txt"});
    let r = send(&app, &thief.access, &conv, body, None).await;
    assert!(r.status().is_client_error(), "{}", r.status());
    // Their own file goes.
    let body = json!({"content": "read it", "attachments": ["mine.txt"]});
    let r = send(&app, &thief.access, &conv, body, None).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn an_idempotency_key_covers_the_attachments() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(answer("once").into()));
    let (app, [s]) = openai_app(&fake).start_as(["retrier"]).await;
    app.upload(&s.access, "a.txt", "a").await;
    app.upload(&s.access, "b.txt", "b").await;
    let conv = app.new_conversation(&s.access).await;
    let with = |files: Value| json!({"content": "look", "attachments": files});

    let r = send(&app, &s.access, &conv, with(json!(["a.txt"])), Some("k-1")).await;
    assert_eq!(r.status(), 200);
    let first = parse_sse(&r.text().await.unwrap());
    // The same request again follows the same turn, even once the file is gone.
    let r = app
        .delete_as(&s.access, "/api/files/a.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = send(&app, &s.access, &conv, with(json!(["a.txt"])), Some("k-1")).await;
    assert_eq!(r.status(), 200);
    let again = parse_sse(&r.text().await.unwrap());
    assert_eq!(first[0].data["message_id"], again[0].data["message_id"]);
    assert_eq!(fake.request_count(), 1, "the retry ran the model again");
    // Other files (or none) under the same key are another request.
    for other in [json!(["b.txt"]), json!([]), json!(["a.txt", "b.txt"])] {
        let r = send(&app, &s.access, &conv, with(other), Some("k-1")).await;
        expect_error(r, 422, "idempotency_key_reused").await;
    }
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn the_demo_model_reads_an_attached_file_and_says_what_is_in_it() {
    let (app, [s]) = TestApp::builder().start_as(["demo_attacher"]).await;
    app.upload(
        &s.access,
        "plan.md",
        "# Quarterly plan\n\nShip the attachments.\n",
    )
    .await;
    let conv = app.new_conversation(&s.access).await;
    let body = json!({"content": "Summarise this", "attachments": ["plan.md"]});
    let r = send(&app, &s.access, &conv, body, None).await;
    assert_eq!(r.status(), 200);
    let events = parse_sse(&r.text().await.unwrap());
    let call = events
        .iter()
        .find(|e| e.event == "tool_call")
        .expect("a tool call");
    assert_eq!(call.data["name"], "read_file");
    assert_eq!(call.data["arguments"]["path"], "plan.md");
    let text = streamed_text(&events);
    assert!(
        text.starts_with("[demo] I read the attached file `plan.md`: 3 lines, 40 bytes, 6 words."),
        "{text}"
    );
    assert!(
        text.contains("> # Quarterly plan\n> Ship the attachments."),
        "{text}"
    );
    assert_eq!(events.last().unwrap().event, "done");
}
