//! `/v1/chat/completions` starts its turn without looking its key up first when this process
//! has seen the key: the key, the account and the new conversation are checked and stored in
//! the turn's first round trip. These tests pin that the shortcut changes nothing a caller
//! sees: a key revoked, expired or whose owner is disabled after it was used is refused at
//! once (401, nothing reaches the model, nothing is stored), and a call's earlier messages
//! are stored in order with its conversation.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::openai_sdk::{app_on, new_key, MODEL};

async fn complete(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn hi() -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
}

#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    role: String,
    #[diesel(sql_type = Text)]
    content: String,
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut db = app.db().await;
    diesel::sql_query(sql)
        .get_result::<N>(&mut db)
        .await
        .unwrap()
        .n
}

/// Asserts a 401 whose message contains `says`, with nothing sent upstream or stored.
async fn refused(app: &TestApp, fake: &FakeUpstream, key: &str, body: &Value, says: &str) {
    let (calls, convs) = (
        fake.request_count(),
        count(app, "SELECT count(*) AS n FROM conversations").await,
    );
    let (status, answer) = complete(app, key, body).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_api_key", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{answer}");
    assert_eq!(
        fake.request_count(),
        calls,
        "a refused call reached the model"
    );
    assert_eq!(
        count(app, "SELECT count(*) AS n FROM conversations").await,
        convs,
        "a refused call stored a conversation"
    );
}

#[tokio::test]
async fn a_used_key_revoked_expired_or_whose_owner_is_disabled_is_refused_at_once() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, bob]) = app_on(&fake).start_as(["root", "bob"]).await;
    fake.set_default(Some(Reply::text("ok").scripted()));

    // Revoked after use: refused, also when the request is wrong in other ways.
    let (id, key) = new_key(&app, &bob.access, "first").await;
    assert_eq!(complete(&app, &key, &hi()).await.0, 200);
    let r = app
        .delete_as(&bob.access, &format!("/api/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    refused(&app, &fake, &key, &hi(), "invalid API key").await;
    assert_eq!(complete(&app, &key, &hi()).await.0, 401, "asked twice");
    let (id, key) = new_key(&app, &bob.access, "second").await;
    assert_eq!(complete(&app, &key, &hi()).await.0, 200);
    let r = app
        .delete_as(&admin.access, &format!("/api/admin/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let unknown_model =
        json!({"model": "gpt-unknown", "messages": [{"role": "user", "content": "hi"}]});
    refused(&app, &fake, &key, &unknown_model, "invalid API key").await;

    // Owner disabled after use, then enabled again.
    let (id, key) = new_key(&app, &bob.access, "third").await;
    assert_eq!(complete(&app, &key, &hi()).await.0, 200);
    let disable = |on: bool| {
        app.patch_as(&admin.access, &format!("/api/admin/users/{}", bob.user_id))
            .json(&json!({"disabled": on}))
            .send()
    };
    assert_eq!(disable(true).await.unwrap().status(), 200);
    refused(&app, &fake, &key, &hi(), "disabled").await;
    assert_eq!(disable(false).await.unwrap().status(), 200);
    assert_eq!(complete(&app, &key, &hi()).await.0, 200);

    // Expired after use.
    let mut db = app.db().await;
    diesel::sql_query(format!(
        "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = '{id}'"
    ))
    .execute(&mut db)
    .await
    .unwrap();
    refused(&app, &fake, &key, &hi(), "expired").await;
}

#[tokio::test]
async fn a_call_stores_its_conversation_with_the_earlier_messages_in_order() {
    let fake = FakeUpstream::start().await;
    let (app, [user]) = app_on(&fake).start_as(["user"]).await;
    let (_, key) = new_key(&app, &user.access, "k").await;
    for reply in ["first", "second"] {
        fake.push(Reply::text(reply));
        let body = json!({"model": MODEL, "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"},
        ]});
        let (status, answer) = complete(&app, &key, &body).await;
        assert_eq!(status, 200, "{answer}");
        let conv = answer["agentchat"]["conversation_id"].as_str().unwrap();
        let mut db = app.db().await;
        let rows: Vec<Row> = diesel::sql_query(format!(
            "SELECT role, content FROM messages WHERE conversation_id = '{conv}' ORDER BY seq"
        ))
        .load(&mut db)
        .await
        .unwrap();
        let got: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.role.as_str(), r.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "one"),
                ("assistant", "two"),
                ("user", "three"),
                ("assistant", reply)
            ]
        );
        let owner = count(
            &app,
            &format!(
                "SELECT count(*) AS n FROM conversations WHERE id = '{conv}' \
                 AND user_id = '{}' AND active_turn_id IS NULL AND model = '{MODEL}'",
                user.user_id
            ),
        )
        .await;
        assert_eq!(owner, 1, "the conversation is the caller's, released");
    }
}
