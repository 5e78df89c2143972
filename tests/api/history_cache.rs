//! A turn's start reads only what was stored since the history this process last read
//! (`turn::history_cache`): the model must still get exactly the conversation as the
//! database has it, after an edit took messages back and after another replica added some.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::pg_proxy::PgProxy;
use agentchat_tests::*;
use serde_json::{json, Value};

/// The texts of the messages the model was sent in the turn that asked `question` (system
/// prompt left out).
fn sent(fake: &FakeUpstream, question: &str) -> Vec<String> {
    let texts = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter(|m| m["role"] != "system")
                    .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    fake.requests()
        .iter()
        .map(|r| texts(&r["body"]))
        .rfind(|t| t.last().map(String::as_str) == Some(question))
        .unwrap_or_else(|| panic!("no request asked {question:?}"))
}

async fn turn(app: &TestApp, token: &str, conversation: &str, text: &str, fake: &FakeUpstream) {
    fake.push(Reply::text(format!("re: {text}")));
    let events = app.chat(token, conversation, text).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
}

/// The statement that reads only the newer messages, as the relay saw it.
const READS_ONLY_NEWER: &str = "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id";
const READS_THE_WINDOW: &str = "WITH newer AS";

#[tokio::test]
async fn the_model_gets_the_conversation_as_stored_after_an_edit_and_another_replicas_turn() {
    let fake = FakeUpstream::start().await;
    let proxy = PgProxy::start("127.0.0.1:5432".to_owned()).await;
    let (first, [_admin, alice]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| {
            s.database.url =
                agentchat::config::DatabaseUrl::new(proxy.url_for(s.database.url.expose()))
        })
        .start_as(["boss", "alice"])
        .await;
    let second = TestApp::builder()
        .openai(&fake)
        .database(&first.database_url)
        .start()
        .await;
    let conv = first.new_conversation(&alice.access).await;
    let token = &alice.access;

    turn(&first, token, &conv, "one", &fake).await;
    turn(&first, token, &conv, "two", &fake).await;
    let from = proxy.count();
    turn(&first, token, &conv, "three", &fake).await;
    assert_eq!(
        sent(&fake, "three"),
        ["one", "re: one", "two", "re: two", "three"],
        "what was known plus what came after"
    );
    let statements = proxy.since(from).concat().join("\n");
    assert!(statements.contains(READS_ONLY_NEWER), "{statements}");
    assert!(!statements.contains(READS_THE_WINDOW), "{statements}");

    // An edit takes "two" and everything after it back: the next turn must not see them.
    let stored = first.conversation(token, &conv).await;
    let two = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "two")
        .unwrap()["id"]
        .clone();
    let r = first
        .post_as(token, &format!("/api/conversations/{conv}/truncate"))
        .json(&json!({ "from": two }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["removed"], 4);
    let from = proxy.count();
    turn(&first, token, &conv, "four", &fake).await;
    assert_eq!(sent(&fake, "four"), ["one", "re: one", "four"]);
    let statements = proxy.since(from).concat().join("\n");
    assert!(
        statements.contains(READS_THE_WINDOW),
        "read whole again: {statements}"
    );

    // Another replica adds a turn; this one's next turn sees it.
    turn(&second, token, &conv, "five", &fake).await;
    turn(&first, token, &conv, "six", &fake).await;
    assert_eq!(
        sent(&fake, "six"),
        ["one", "re: one", "four", "re: four", "five", "re: five", "six"]
    );
}

#[tokio::test]
async fn a_full_conversation_is_refused_when_its_size_comes_from_what_is_known() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, alice]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.llm.max_conversation_messages = 6)
        .start_as(["boss", "alice"])
        .await;
    let conv = app.new_conversation(&alice.access).await;
    for text in ["one", "two", "three"] {
        turn(&app, &alice.access, &conv, text, &fake).await;
    }
    // Six messages now; the third turn's start knew four of them and counted on from there.
    let r = app.send_message(&alice.access, &conv, "four").await;
    expect_error(r, 409, "conversation_full").await;
}
