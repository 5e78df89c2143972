//! Issue 41, finding 7: embedding a search query was never budgeted nor recorded, and kept
//! running on a spent budget. A query is now held, charged and recorded like an ingestion
//! batch: a search moves the budget and adds a usage row, and a spent budget refuses it
//! before the provider is called (429 `budget_exhausted` on the API, a tool error the model
//! can read in a chat).

use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::json;

use crate::knowledge_support::{collection, on_fake, settled, strings, upload};

const HOLIDAYS: &str = include_str!("knowledge_corpus/holidays.md");

async fn search_status(app: &TestApp, token: &str, q: &str) -> (u16, serde_json::Value) {
    let r = app
        .get_as(token, "/api/knowledge/search")
        .query(&[("q", q)])
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn embed_rows(app: &TestApp, user: uuid::Uuid) -> usize {
    strings(
        app,
        &format!(
            "SELECT id::text AS v FROM usage_records WHERE model = 'embed' AND user_id = '{user}'"
        ),
    )
    .await
    .len()
}

#[tokio::test]
async fn a_search_pays_for_its_query_and_a_spent_budget_refuses_it() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = on_fake(&fake)
        .role("member", json!({"tools": ["search_knowledge"]}))
        .start_as(["boss", "ann"])
        .await;
    // A limited budget, so that its period row counts what is spent.
    app.set_budget(&admin.access, ann.user_id, Some(1_000_000))
        .await;
    let c = collection(&app, &ann.access, "Handbook").await;
    upload(&app, &ann.access, &c, "holidays.md", HOLIDAYS.into()).await;
    assert_eq!(
        settled(&app, &ann.access, &c, "holidays.md").await["state"],
        "ready"
    );

    let before = app.budget_totals(ann.user_id).await;
    let rows = embed_rows(&app, ann.user_id).await;
    let calls = fake.embedding_request_count();
    let (status, found) = search_status(&app, &ann.access, "paid holiday").await;
    assert_eq!(status, 200, "{found}");
    assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
    assert_eq!(fake.embedding_request_count(), calls + 1);
    let after = app.budget_totals(ann.user_id).await;
    assert_eq!(embed_rows(&app, ann.user_id).await, rows + 1);
    assert!(
        after.spent > before.spent && after.ledger > before.ledger,
        "{before:?} -> {after:?}"
    );
    assert_eq!((after.reserved, after.holds), (0, 0), "{after:?}");

    // Spent: refused before the provider is asked, and nothing is recorded.
    app.set_budget(&admin.access, ann.user_id, Some(1)).await;
    let (status, refused) = search_status(&app, &ann.access, "paid holiday").await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (429, Some("budget_exhausted")),
        "{refused}"
    );
    assert_eq!(fake.embedding_request_count(), calls + 1);
    assert_eq!(embed_rows(&app, ann.user_id).await, rows + 1);

    // In a chat: the budget is spent while the model decides to search (the turn itself was
    // admitted); the tool answers with an error the model can read, and embeds nothing.
    app.set_budget(&admin.access, ann.user_id, Some(1_000_000))
        .await;
    let conv = app.new_conversation(&ann.access).await;
    fake.push(
        Reply::tool_call("c1", "search_knowledge", r#"{"query": "paid holiday"}"#)
            .delay_first_byte(Duration::from_millis(1500)),
    );
    fake.push(Reply::text("ok"));
    let chat = app.chat(&ann.access, &conv, "how many days off?");
    let spend = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        app.set_budget(&admin.access, ann.user_id, Some(1)).await;
    };
    let (events, ()) = tokio::join!(chat, spend);
    let result = events
        .iter()
        .find(|e| e.event == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {events:?}"));
    assert_eq!(result.data["success"], false, "{result:?}");
    let error = result.data["error"].as_str().unwrap();
    assert!(
        error.contains("budget") && error.contains("search query"),
        "{error}"
    );
    assert_eq!(fake.embedding_request_count(), calls + 1);
    assert_eq!(embed_rows(&app, ann.user_id).await, rows + 1);
}
