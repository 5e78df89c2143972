//! Issue 22 items 8 and 5: an admin reads a conversation read-only (and the reading is
//! recorded in the admin changes), and budget refusals carry their numbers.

use agentchat_tests::*;
use serde_json::{json, Value};

use crate::admin_changes::changes;

#[tokio::test]
async fn an_admin_reads_a_conversation_read_only_and_the_reading_is_recorded() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let member = app.signed_up("member1").await;
    let conv = app.new_conversation(&member.access).await;
    let events = app.chat(&member.access, &conv, "what time is it?").await;
    assert_eq!(events.last().unwrap().event, "done");
    let path = format!("/api/admin/conversations/{conv}");
    let r = app.get_as(&member.access, &path).send().await.unwrap();
    expect_error(r, 403, "forbidden").await;
    let body: Value = app
        .get_as(&admin.access, &path)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["id"], conv);
    assert_eq!(body["owner"], "member1");
    assert_eq!(body["owner_id"], member.user_id.to_string());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "what time is it?");
    assert!(messages.iter().any(|m| m["role"] == "assistant"));
    // Nothing to post with: the view has no write methods.
    let r = app
        .post_as(&admin.access, &path)
        .json(&json!({"content": "hi"}))
        .send()
        .await
        .unwrap();
    assert!([404, 405].contains(&r.status().as_u16()), "{}", r.status());
    let r = app
        .get_as(
            &admin.access,
            &format!("/api/admin/conversations/{}", uuid::Uuid::new_v4()),
        )
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    let page = changes(&app, &admin.access, "?kind=conversation.view").await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    assert_eq!(items[0]["target_id"], conv);
    assert_eq!(items[0]["target"], format!("{conv} of member1"));
    assert_eq!(items[0]["after"]["owner"], "member1");
}

#[tokio::test]
async fn a_budget_refusal_says_what_the_message_needs_and_what_is_left() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let member = app.signed_up("member1").await;
    app.set_budget(&admin.access, member.user_id, Some(50))
        .await;
    let conv = app.new_conversation(&member.access).await;
    let r = app.send_message(&member.access, &conv, "hello").await;
    let body = expect_error(r, 429, "budget_exhausted").await;
    let d = &body["error"]["details"];
    let needed = d["needed"].as_i64().unwrap();
    assert!(needed > 50, "{body}");
    assert_eq!(d["remaining"], 50);
    assert_eq!(d["limit"], 50);
    assert!(d["resets_at"].is_string(), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("needs about {needed} tokens")) && message.contains("50 left"),
        "{message}"
    );
    assert!(!message.contains("used up"), "{message}");

    // Nothing left: now it is used up.
    app.set_budget(&admin.access, member.user_id, Some(0)).await;
    let r = app.send_message(&member.access, &conv, "hello").await;
    let body = expect_error(r, 429, "budget_exhausted").await;
    assert_eq!(body["error"]["details"]["remaining"], 0);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used up"),
        "{body}"
    );
}
