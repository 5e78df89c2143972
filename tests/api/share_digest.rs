//! Issue 41, finding 6: a message records the SHA-256 of each file it attaches, and a link
//! serves a file only while its content is that one: a file replaced by another of the same
//! size is 410 `share_file_changed`. Messages stored before digests were recorded keep the
//! old rule (served while the size matches).

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

/// SHA-256 of `abcd`.
const ABCD: &str = "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589";

/// A conversation of `token`'s whose first message attached `path`, and an org link to it.
async fn shared_with_file(app: &TestApp, token: &str, path: &str) -> (String, String) {
    let conv = app.new_conversation(token).await;
    let r = app
        .post_as(token, &format!("/api/conversations/{conv}/messages"))
        .json(&json!({"content": "What is in this?", "attachments": [path]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let r = app
        .post_as(token, &format!("/api/conversations/{conv}/shares"))
        .json(&json!({"scope": "org"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let made: Value = r.json().await.unwrap();
    (conv, made["id"].as_str().unwrap().to_owned())
}

async fn download(app: &TestApp, token: &str, id: &str, path: &str) -> reqwest::Response {
    app.get_as(token, &format!("/api/shares/{id}/files/{path}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_file_replaced_by_one_of_the_same_size_is_gone_from_the_link() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    app.upload(&alice.access, "notes.txt", "abcd").await;
    let (conv, id) = shared_with_file(&app, &alice.access, "notes.txt").await;

    // The message records the file's digest with its size.
    let stored = app.conversation(&alice.access, &conv).await;
    assert_eq!(
        stored["messages"][0]["attachments"],
        json!([{"path": "notes.txt", "bytes": 4, "sha256": ABCD}])
    );
    let r = download(&app, &bob.access, &id, "notes.txt").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "abcd");

    // Same size, other bytes: not what was shared.
    app.upload(&alice.access, "notes.txt", "abce").await;
    let body = expect_error(
        download(&app, &bob.access, &id, "notes.txt").await,
        410,
        "share_file_changed",
    )
    .await;
    assert!(
        !body.to_string().contains("abce"),
        "the refusal shows nothing of the file: {body}"
    );
    // Put back as it was, it is the shared file again.
    app.upload(&alice.access, "notes.txt", "abcd").await;
    assert_eq!(
        download(&app, &bob.access, &id, "notes.txt").await.status(),
        200
    );
}

#[tokio::test]
async fn files_of_messages_without_a_digest_are_served_while_their_size_matches() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    app.upload(&alice.access, "old.txt", "abcd").await;
    let (conv, id) = shared_with_file(&app, &alice.access, "old.txt").await;
    // As a message stored before digests were recorded has it.
    diesel::sql_query(
        "UPDATE messages SET attachments = '[{\"path\": \"old.txt\", \"bytes\": 4}]'::jsonb \
          WHERE conversation_id = $1 AND role = 'user'",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(&conv).unwrap())
    .execute(&mut app.db().await)
    .await
    .unwrap();
    app.upload(&alice.access, "old.txt", "wxyz").await;
    assert_eq!(
        download(&app, &bob.access, &id, "old.txt").await.status(),
        200
    );
    app.upload(&alice.access, "old.txt", "longer").await;
    expect_error(
        download(&app, &bob.access, &id, "old.txt").await,
        410,
        "share_file_changed",
    )
    .await;
}
