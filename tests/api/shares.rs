//! Sharing a conversation (issue 32 part 3, DESIGN §14): read-only links to a snapshot,
//! `org` for signed-in members, `public` only for roles an admin allowed; hidden tool
//! details; expiry and revocation (410); every view recorded; attached files through the
//! link; owners only manage their links; forking one's own conversation or a link into a
//! new conversation that goes on with the model.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

async fn share(app: &TestApp, token: &str, conv: &str, body: Value) -> reqwest::Response {
    app.post_as(token, &format!("/api/conversations/{conv}/shares"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// A new link (asserting 201); its JSON.
async fn made(app: &TestApp, token: &str, conv: &str, body: Value) -> Value {
    let r = share(app, token, conv, body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

/// `GET /api/shares/{id}` as `token`'s user, or as nobody.
async fn read(app: &TestApp, token: Option<&str>, id: &str) -> reqwest::Response {
    let mut req = app.client.get(app.url(&format!("/api/shares/{id}")));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

async fn read_ok(app: &TestApp, token: Option<&str>, id: &str) -> Value {
    let r = read(app, token, id).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

async fn fork(app: &TestApp, token: &str, path: &str, at: &str) -> reqwest::Response {
    app.post_as(token, path)
        .json(&json!({"at_message_id": at}))
        .send()
        .await
        .unwrap()
}

#[derive(diesel::QueryableByName, Debug)]
struct ViewRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Uuid>)]
    viewer_id: Option<uuid::Uuid>,
    #[diesel(sql_type = diesel::sql_types::Text)]
    action: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    file: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    viewer_address: Option<String>,
}

/// The audit rows of link `id`, oldest first.
async fn views(app: &TestApp, id: &str) -> Vec<ViewRow> {
    diesel::sql_query(
        "SELECT viewer_id, action, file, viewer_address FROM share_views WHERE share_id = $1 \
         ORDER BY id",
    )
    .bind::<diesel::sql_types::Text, _>(id)
    .load(&mut app.db().await)
    .await
    .unwrap()
}

fn roles_and_contents(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A conversation of `token`'s with one finished exchange per question.
async fn conversation_with(app: &TestApp, token: &str, questions: &[&str]) -> String {
    let conv = app.new_conversation(token).await;
    for q in questions {
        let events = app.chat(token, &conv, q).await;
        assert_eq!(events.last().unwrap().event, "done", "{q}: {events:?}");
    }
    conv
}

#[tokio::test]
async fn org_links_are_read_by_members_not_by_nobody_and_every_view_is_recorded() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    let conv = conversation_with(&app, &alice.access, &["hello there"]).await;
    let link = made(&app, &alice.access, &conv, json!({"scope": "org"})).await;
    let id = link["id"].as_str().unwrap();
    assert!(id.len() >= 22, "{link}");
    assert_eq!(link["scope"], "org");
    assert_eq!(link["redact_tools"], false);
    assert_eq!(link["expires_at"], Value::Null);
    assert_eq!(link["message_count"], 2);
    assert_eq!(link["state"], "live");
    assert!(link["created_at"].is_string());
    assert!(
        link["url"].as_str().unwrap().ends_with(&format!("/s/{id}")),
        "{link}"
    );
    // Two links to the same conversation are different secrets.
    let other = made(&app, &alice.access, &conv, json!({"scope": "org"})).await;
    assert_ne!(other["id"], link["id"]);

    let r = read(&app, None, id).await;
    expect_error(r, 401, "sign_in_required").await;
    let r = read(&app, Some(&bob.access), id).await;
    assert_eq!(r.headers()["cache-control"], "no-store");
    let seen: Value = r.json().await.unwrap();
    assert_eq!(
        seen["title"],
        app.conversation(&alice.access, &conv).await["title"]
    );
    assert_eq!(seen["owner"]["display_name"], "alice");
    assert_eq!(seen["mine"], false);
    assert_eq!(seen["can_fork"], true);
    assert_eq!(
        roles_and_contents(&seen["messages"])[0],
        ("user".to_owned(), "hello there".to_owned())
    );
    // An invalid token is refused, not taken for nobody.
    expect_error(
        read(&app, Some("not-a-token"), id).await,
        401,
        "unauthenticated",
    )
    .await;
    // Unknown and malformed ids are simply not found.
    expect_error(
        read(&app, Some(&bob.access), "A".repeat(22).as_str()).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        read(&app, Some(&bob.access), "short").await,
        404,
        "not_found",
    )
    .await;

    let own = read_ok(&app, Some(&alice.access), id).await;
    assert_eq!(own["mine"], true);
    let rows = views(&app, id).await;
    assert_eq!(
        rows.len(),
        2,
        "one row per view, refused ones none: {rows:?}"
    );
    assert_eq!(rows[0].viewer_id, Some(bob.user_id));
    assert_eq!(rows[0].action, "read");
    assert!(rows[0].viewer_address.is_some());
    assert_eq!(rows[1].viewer_id, Some(alice.user_id));

    // The owner's list counts them.
    let list: Value = app
        .get_as(&alice.access, &format!("/api/conversations/{conv}/shares"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["can_share_public"], false);
    let listed = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(listed["views"], 2);
    assert!(listed["last_viewed_at"].is_string());

    // The page is the UI's, under its CSP, never cached.
    let page = app
        .client
        .get(app.url(&format!("/s/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("script-src 'self'"));
    assert_eq!(page.headers()["cache-control"], "no-store");
    assert!(page.text().await.unwrap().contains("/js/share_page.js"));
}

#[tokio::test]
async fn public_links_need_a_role_that_may_make_them() {
    let (app, [root, alice]) = TestApp::builder().start_as(["root", "alice"]).await;
    let conv = conversation_with(&app, &alice.access, &["hello"]).await;
    let r = share(&app, &alice.access, &conv, json!({"scope": "public"})).await;
    expect_error(r, 403, "public_share_not_allowed").await;

    // Admins may by default.
    let mine = conversation_with(&app, &root.access, &["hello"]).await;
    let admin_link = made(&app, &root.access, &mine, json!({"scope": "public"})).await;
    let seen = read_ok(&app, None, admin_link["id"].as_str().unwrap()).await;
    assert_eq!(seen["can_fork"], false);

    // An admin lets members share publicly.
    let roles: Value = app
        .get_as(&root.access, "/api/admin/roles")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let member = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "member")
        .unwrap()
        .clone();
    assert_eq!(member["can_share_public"], false);
    let admin_role = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "admin");
    assert_eq!(admin_role.unwrap()["can_share_public"], true);
    let r = app
        .put_role(
            &root.access,
            "member",
            json!({"tools": member["tools"], "can_share_public": true}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["can_share_public"], true);
    // Another change that does not name it keeps it.
    let r = app
        .put_role(&root.access, "member", json!({"tools": member["tools"]}))
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["can_share_public"], true);

    let link = made(&app, &alice.access, &conv, json!({"scope": "public"})).await;
    let id = link["id"].as_str().unwrap();
    let seen = read_ok(&app, None, id).await;
    assert_eq!(seen["scope"], "public");
    assert_eq!(views(&app, id).await[0].viewer_id, None);

    // Taken away again: the public links of the role stop showing.
    let r = app
        .put_role(
            &root.access,
            "member",
            json!({"tools": member["tools"], "can_share_public": false}),
        )
        .await;
    assert_eq!(r.status(), 200);
    expect_error(read(&app, None, id).await, 410, "share_gone").await;
    // The change is in the admin trail with the flag.
    #[derive(diesel::QueryableByName)]
    struct After {
        #[diesel(sql_type = diesel::sql_types::Text)]
        after: String,
    }
    let last: After = diesel::sql_query(
        "SELECT after::text AS after FROM admin_changes WHERE kind = 'role.update' \
         ORDER BY id DESC LIMIT 1",
    )
    .get_result(&mut app.db().await)
    .await
    .unwrap();
    assert!(
        last.after.contains("\"can_share_public\": false"),
        "{}",
        last.after
    );
}

#[tokio::test]
async fn a_link_is_a_snapshot_and_empty_conversations_have_nothing_to_share() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    let empty = app.new_conversation(&alice.access).await;
    let r = share(&app, &alice.access, &empty, json!({"scope": "org"})).await;
    expect_error(r, 422, "nothing_to_share").await;

    let conv = conversation_with(&app, &alice.access, &["first question"]).await;
    let link = made(&app, &alice.access, &conv, json!({"scope": "org"})).await;
    let id = link["id"].as_str().unwrap();
    let events = app.chat(&alice.access, &conv, "second question").await;
    assert_eq!(events.last().unwrap().event, "done");
    assert_eq!(
        app.conversation(&alice.access, &conv).await["messages"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let seen = read_ok(&app, Some(&bob.access), id).await;
    let shown = roles_and_contents(&seen["messages"]);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(!seen.to_string().contains("second question"));
}

#[tokio::test]
async fn hidden_tool_details_stay_hidden_when_read_and_when_forked() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    let conv = conversation_with(&app, &alice.access, &["what is 2+2*3"]).await;
    let full = app.conversation(&alice.access, &conv).await;
    let tool = full["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the demo model called the calculator")
        .clone();
    assert!(tool["content"].as_str().unwrap().contains('8'), "{tool}");

    let link = made(
        &app,
        &alice.access,
        &conv,
        json!({"scope": "org", "redact_tools": true}),
    )
    .await;
    assert_eq!(link["redact_tools"], true);
    let id = link["id"].as_str().unwrap();
    let seen = read_ok(&app, Some(&bob.access), id).await;
    let messages = seen["messages"].as_array().unwrap();
    let hidden = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        hidden["content"].as_str().unwrap().starts_with("[hidden"),
        "{hidden}"
    );
    let caller = messages
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .unwrap();
    let call = &caller["tool_calls"][0];
    assert_eq!(call["name"], "calculator");
    assert!(call["arguments"]["hidden"].is_string(), "{call}");
    assert!(!call["arguments"].to_string().contains("2+2*3"));

    // The owner shows them again, and hides them once more.
    let r = app
        .patch_as(&alice.access, &format!("/api/shares/{id}"))
        .json(&json!({"redact_tools": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = read_ok(&app, Some(&bob.access), id).await;
    let shown = seen["messages"].as_array().unwrap();
    assert_eq!(
        shown.iter().find(|m| m["role"] == "tool").unwrap()["content"],
        tool["content"]
    );
    let r = app
        .patch_as(&alice.access, &format!("/api/shares/{id}"))
        .json(&json!({"redact_tools": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app
        .patch_as(&alice.access, &format!("/api/shares/{id}"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "nothing_to_change").await;

    // A copy made from the link keeps what was hidden hidden, and goes on.
    let last = messages.last().unwrap()["id"].as_str().unwrap().to_owned();
    let r = fork(&app, &bob.access, &format!("/api/shares/{id}/fork"), &last).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let copy: Value = r.json().await.unwrap();
    let copy_id = copy["id"].as_str().unwrap();
    assert!(
        copy["title"].as_str().unwrap().ends_with(" (copy)"),
        "{copy}"
    );
    let stored = app.conversation(&bob.access, copy_id).await;
    let text = stored["messages"].to_string();
    assert!(text.contains("[hidden"), "{text}");
    assert!(
        !text.contains("2+2*3\"}"),
        "the arguments were copied: {text}"
    );
    assert_eq!(stored["messages"].as_array().unwrap().len(), messages.len());
    assert_eq!(views(&app, id).await.last().unwrap().action, "fork");
    let events = app.chat(&bob.access, copy_id, "what is 6*7").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    assert!(streamed_text(&events).contains("42"), "{events:?}");
    // Alice's conversation is untouched.
    assert_eq!(
        app.conversation(&alice.access, &conv).await["messages"],
        full["messages"]
    );
}

#[tokio::test]
async fn expired_and_revoked_links_are_gone() {
    let clock = TestClock::at(chrono::Utc::now());
    let (app, [_root, alice, bob]) = TestApp::builder()
        .clock(clock.clock())
        .start_as(["root", "alice", "bob"])
        .await;
    let conv = conversation_with(&app, &alice.access, &["hello"]).await;
    let now = chrono::Utc::now();
    for (when, what) in [
        (now - chrono::Duration::minutes(1), "in the past"),
        (now + chrono::Duration::days(400), "over a year away"),
    ] {
        let r = share(
            &app,
            &alice.access,
            &conv,
            json!({"scope": "org", "expires_at": when}),
        )
        .await;
        let body = expect_error(r, 400, "invalid_expires_at").await;
        assert!(body.to_string().len() > 10, "{what}");
    }
    let link = made(
        &app,
        &alice.access,
        &conv,
        json!({"scope": "org", "expires_at": now + chrono::Duration::days(1)}),
    )
    .await;
    let id = link["id"].as_str().unwrap();
    read_ok(&app, Some(&bob.access), id).await;
    clock.advance(chrono::Duration::days(2));
    let gone = expect_error(read(&app, Some(&bob.access), id).await, 410, "share_gone").await;
    assert!(gone["error"]["message"]
        .as_str()
        .unwrap()
        .contains("expired"));
    // The owner gives it a new expiry: it works again.
    let later = chrono::Utc::now() + chrono::Duration::days(10);
    let r = app
        .patch_as(&alice.access, &format!("/api/shares/{id}"))
        .json(&json!({"expires_at": later}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    read_ok(&app, Some(&bob.access), id).await;

    // Revoked: gone at once; revoking again is fine; it cannot be changed back.
    let r = app
        .delete_as(&alice.access, &format!("/api/shares/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let gone = expect_error(read(&app, Some(&bob.access), id).await, 410, "share_gone").await;
    assert!(gone["error"]["message"]
        .as_str()
        .unwrap()
        .contains("revoked"));
    let r = app
        .delete_as(&alice.access, &format!("/api/shares/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = app
        .patch_as(&alice.access, &format!("/api/shares/{id}"))
        .json(&json!({"redact_tools": true}))
        .send()
        .await
        .unwrap();
    expect_error(r, 410, "share_gone").await;
    let r = fork(
        &app,
        &bob.access,
        &format!("/api/shares/{id}/fork"),
        &uuid::Uuid::new_v4().to_string(),
    )
    .await;
    expect_error(r, 410, "share_gone").await;
    let listed: Value = app
        .get_as(&alice.access, &format!("/api/conversations/{conv}/shares"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"][0]["state"], "revoked");
    // Only the successful readings were recorded.
    assert_eq!(views(&app, id).await.len(), 2);
}

#[tokio::test]
async fn attached_files_download_through_the_link_and_nothing_else_does() {
    let (app, [_root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    app.upload(&alice.access, "notes.txt", "Quarterly plan\nship it\n")
        .await;
    app.upload(&alice.access, "private.txt", "not shared").await;
    let conv = app.new_conversation(&alice.access).await;
    let r = app
        .post_as(
            &alice.access,
            &format!("/api/conversations/{conv}/messages"),
        )
        .json(&json!({"content": "What is in this?", "attachments": ["notes.txt"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let link = made(&app, &alice.access, &conv, json!({"scope": "org"})).await;
    let id = link["id"].as_str().unwrap();
    let seen = read_ok(&app, Some(&bob.access), id).await;
    assert_eq!(
        seen["messages"][0]["attachments"],
        json!([{"path": "notes.txt", "bytes": 23,
                 "sha256": "e42c00ea657164ba1ce3819988604d590830ab6f4e440e591e2a0f0539abe38f"}])
    );

    let file = |token: Option<&str>, path: &str| {
        let mut req = app
            .client
            .get(app.url(&format!("/api/shares/{id}/files/{path}")));
        if let Some(t) = token {
            req = req.bearer_auth(t.to_owned());
        }
        req.send()
    };
    let r = file(Some(&bob.access), "notes.txt").await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"notes.txt\""
    );
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));
    assert_eq!(r.text().await.unwrap(), "Quarterly plan\nship it\n");
    let rows = views(&app, id).await;
    let last = rows.last().unwrap();
    assert_eq!(
        (last.action.as_str(), last.file.as_deref()),
        ("file", Some("notes.txt"))
    );

    // A file of the owner's that no message of the snapshot attached is not reachable.
    for other in ["private.txt", "../notes.txt", "missing.txt"] {
        let r = file(Some(&bob.access), other).await.unwrap();
        assert_eq!(r.status(), 404, "{other}");
        assert!(!r.text().await.unwrap().contains("not shared"));
    }
    expect_error(
        file(None, "notes.txt").await.unwrap(),
        401,
        "sign_in_required",
    )
    .await;
    // Replaced after sharing: no longer what was shared.
    app.upload(
        &alice.access,
        "notes.txt",
        "a different, longer text than before",
    )
    .await;
    expect_error(
        file(Some(&bob.access), "notes.txt").await.unwrap(),
        410,
        "share_file_changed",
    )
    .await;

    // A copy made by someone else names the files but does not attach them: they are in
    // the sharer's workspace, not the reader's.
    let first = seen["messages"][0]["id"].as_str().unwrap();
    let r = fork(&app, &bob.access, &format!("/api/shares/{id}/fork"), first).await;
    assert_eq!(r.status(), 201);
    let copy: Value = r.json().await.unwrap();
    let stored = app
        .conversation(&bob.access, copy["id"].as_str().unwrap())
        .await;
    let question = &stored["messages"][0];
    assert!(question.get("attachments").is_none(), "{question}");
    assert!(
        question["content"]
            .as_str()
            .unwrap()
            .contains("not copied: notes.txt"),
        "{question}"
    );
    // The owner's own copy keeps them (same workspace).
    let r = fork(
        &app,
        &alice.access,
        &format!("/api/conversations/{conv}/fork"),
        first,
    )
    .await;
    let own: Value = r.json().await.unwrap();
    let stored = app
        .conversation(&alice.access, own["id"].as_str().unwrap())
        .await;
    assert_eq!(stored["messages"][0]["attachments"][0]["path"], "notes.txt");
}

#[tokio::test]
async fn nobody_shares_lists_revokes_or_forks_someone_elses_conversation() {
    let (app, [root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    let conv = conversation_with(&app, &alice.access, &["hello"]).await;
    let link = made(&app, &alice.access, &conv, json!({"scope": "org"})).await;
    let id = link["id"].as_str().unwrap();
    let first = app.conversation(&alice.access, &conv).await["messages"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = share(&app, &bob.access, &conv, json!({"scope": "org"})).await;
    expect_error(r, 404, "not_found").await;
    let r = app
        .get_as(&bob.access, &format!("/api/conversations/{conv}/shares"))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    let r = fork(
        &app,
        &bob.access,
        &format!("/api/conversations/{conv}/fork"),
        &first,
    )
    .await;
    expect_error(r, 404, "not_found").await;
    let r = app
        .delete_as(&bob.access, &format!("/api/shares/{id}"))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    let r = app
        .patch_as(&bob.access, &format!("/api/shares/{id}"))
        .json(&json!({"redact_tools": true}))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    read_ok(&app, Some(&bob.access), id).await;

    // An admin sees every live link and may revoke any; that is in the admin trail.
    let all: Value = app
        .get_as(&root.access, "/api/admin/shares")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let item = &all["items"][0];
    assert_eq!(
        (item["id"].as_str(), item["owner"].as_str()),
        (Some(id), Some("alice"))
    );
    let r = app
        .get_as(&bob.access, "/api/admin/shares")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = app
        .delete_as(&root.access, &format!("/api/shares/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    expect_error(read(&app, Some(&bob.access), id).await, 410, "share_gone").await;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let trail: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM admin_changes WHERE kind = 'share.revoke' AND actor_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(root.user_id)
    .get_result(&mut app.db().await)
    .await
    .unwrap();
    assert_eq!(trail.n, 1);
}

#[tokio::test]
async fn forking_ones_own_conversation_copies_exactly_the_prefix_and_goes_on() {
    let (app, [_root, alice]) = TestApp::builder().start_as(["root", "alice"]).await;
    let conv = conversation_with(
        &app,
        &alice.access,
        &["hello", "what is 2+2*3", "what time is it"],
    )
    .await;
    let original = app.conversation(&alice.access, &conv).await;
    let messages = original["messages"].as_array().unwrap().clone();
    let all = roles_and_contents(&original["messages"]);

    // At the final answer of the second exchange: everything up to it.
    let second_q = messages
        .iter()
        .position(|m| m["content"] == "what is 2+2*3")
        .unwrap();
    let third_q = messages
        .iter()
        .position(|m| m["content"] == "what time is it")
        .unwrap();
    let answer = &messages[third_q - 1];
    assert_eq!(answer["role"], "assistant");
    let r = fork(
        &app,
        &alice.access,
        &format!("/api/conversations/{conv}/fork"),
        answer["id"].as_str().unwrap(),
    )
    .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let copy: Value = r.json().await.unwrap();
    assert_eq!(
        copy["title"],
        format!("{} (copy)", original["title"].as_str().unwrap())
    );
    let copy_id = copy["id"].as_str().unwrap().to_owned();
    let stored = app.conversation(&alice.access, &copy_id).await;
    assert_eq!(
        roles_and_contents(&stored["messages"]),
        all[..third_q].to_vec()
    );
    for m in stored["messages"].as_array().unwrap() {
        assert!(m.get("input_tokens").is_none(), "usage was copied: {m}");
        assert!(!messages.iter().any(|o| o["id"] == m["id"]), "ids are new");
    }
    // It is in the caller's list, and the original is unchanged.
    let list: Value = app
        .get_as(&alice.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == copy_id.as_str()));
    assert_eq!(
        app.conversation(&alice.access, &conv).await["messages"],
        original["messages"]
    );

    // At the assistant message that called the calculator: its result comes along.
    let caller = messages[second_q..]
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .unwrap();
    let r = fork(
        &app,
        &alice.access,
        &format!("/api/conversations/{conv}/fork"),
        caller["id"].as_str().unwrap(),
    )
    .await;
    let stepped: Value = r.json().await.unwrap();
    let stored = app
        .conversation(&alice.access, stepped["id"].as_str().unwrap())
        .await;
    let got = roles_and_contents(&stored["messages"]);
    assert_eq!(got.last().unwrap().0, "tool", "{got:?}");
    assert_eq!(got, all[..got.len()].to_vec());

    // Not a user or assistant message of this conversation: 422.
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    for at in [
        tool["id"].as_str().unwrap().to_owned(),
        uuid::Uuid::new_v4().to_string(),
    ] {
        let r = fork(
            &app,
            &alice.access,
            &format!("/api/conversations/{conv}/fork"),
            &at,
        )
        .await;
        expect_error(r, 422, "invalid_fork_point").await;
    }

    // The copy goes on with the model.
    let events = app.chat(&alice.access, &copy_id, "what is 6*7").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    assert!(streamed_text(&events).contains("42"), "{events:?}");
    let stored = app.conversation(&alice.access, &copy_id).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), third_q + 4);
}
