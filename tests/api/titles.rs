//! Model-generated conversation titles (issue 22 item 4): one short call after the first
//! answer, in the background, charged like any call; never over a title the user chose.

use std::time::{Duration, Instant};

use agentchat::llm::title::TITLE_INSTRUCTIONS;
use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

/// A server on the fake model that titles new conversations.
fn titling(fake: &FakeUpstream) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .model("fake")
        .settings(|s| s.llm.auto_titles = true)
}

fn text(t: &str, input: u64, output: u64) -> Reply {
    Reply::Text {
        text: t.into(),
        usage: Some(Usage::new(input, output)),
    }
}

/// `request`: one of the fake's `{path, headers, body}` records.
fn is_title_call(request: &Value) -> bool {
    request["body"]["messages"][0]["content"] == TITLE_INSTRUCTIONS
}

/// The conversation once its title is no longer the default (or after `wait`).
async fn titled(app: &TestApp, token: &str, id: &str, wait: Duration) -> Value {
    let until = Instant::now() + wait;
    loop {
        let c = app.conversation(token, id).await;
        if c["title_auto"] == false || Instant::now() > until {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(diesel::QueryableByName, Debug)]
struct UsageRow {
    #[diesel(sql_type = Nullable<Text>)]
    message: Option<String>,
    #[diesel(sql_type = Text)]
    model: String,
    #[diesel(sql_type = BigInt)]
    charged: i64,
}

async fn usage_rows(app: &TestApp, conversation: &str) -> Vec<UsageRow> {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT message_id::text AS message, model, charged FROM usage_records \
          WHERE conversation_id = $1::uuid ORDER BY created_at, message_id NULLS LAST",
    )
    .bind::<Text, _>(conversation)
    .load(&mut db)
    .await
    .unwrap()
}

#[tokio::test]
async fn the_first_answer_titles_the_chat_in_the_background_and_is_charged() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, me]) = titling(&fake)
        .budget("tia", Some(100_000))
        .start_as(["boss", "tia"])
        .await;
    let id = app.new_conversation(&me.access).await;
    let created = app.conversation(&me.access, &id).await;
    assert_eq!(created["title"], "New conversation");
    assert_eq!(created["title_auto"], true);

    fake.push(text("Lisbon in May is lovely.", 300, 40));
    // The title call answers slowly: `done` and the next message must not wait for it.
    fake.push(
        text("\"Trip to Lisbon.\"\nextra line", 90, 7)
            .delay_first_byte(Duration::from_millis(1500)),
    );
    let started = Instant::now();
    let events = app
        .chat(
            &me.access,
            &id,
            "Plan a   weekend trip to Lisbon in May for two people",
        )
        .await;
    assert_eq!(event_names(&events).last().unwrap(), "done");
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "done waited for the title"
    );
    // The first message is the title meanwhile (never the default once a message is in).
    let meanwhile = app.conversation(&me.access, &id).await;
    assert_eq!(
        meanwhile["title"],
        "Plan a weekend trip to Lisbon in May for two people"
    );
    assert_eq!(meanwhile["title_auto"], true);
    // The next message is taken at once, while the title call is still out.
    let until = Instant::now() + Duration::from_secs(5);
    while fake.request_count() < 2 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(is_title_call(&fake.requests()[1]));
    fake.push(text("Sure.", 350, 5));
    app.chat(&me.access, &id, "and in June?").await;
    assert_eq!(app.conversation(&me.access, &id).await["title_auto"], true);

    let done = titled(&app, &me.access, &id, Duration::from_secs(10)).await;
    assert_eq!(done["title"], "Trip to Lisbon");
    assert_eq!(done["title_auto"], false);

    // Exactly one title call (the second answer did not start another), as the fake saw it.
    let calls: Vec<Value> = fake
        .requests()
        .into_iter()
        .filter(is_title_call)
        .map(|r| r["body"].clone())
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["max_tokens"], 24);
    assert!(calls[0]
        .get("tools")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)));
    let shown = calls[0]["messages"][1]["content"].as_str().unwrap();
    assert!(shown.contains("Plan a   weekend trip") && shown.contains("Lisbon in May is lovely."));

    // Charged like any call: its own usage row (no message), in the budget.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rows = usage_rows(&app, &id).await;
    let title_rows: Vec<&UsageRow> = rows.iter().filter(|r| r.message.is_none()).collect();
    assert_eq!(title_rows.len(), 1, "{rows:?}");
    assert_eq!(title_rows[0].charged, 97);
    assert_eq!(title_rows[0].model, "fake");
    let totals = app.budget_totals(me.user_id).await;
    assert_eq!(totals.spent, totals.ledger);
    assert_eq!(totals.spent, 340 + 97 + 355);
    assert_eq!((totals.reserved, totals.holds), (0, 0));

    // A later answer makes no more title calls.
    fake.push(text("Noted.", 10, 2));
    app.chat(&me.access, &id, "thanks").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        fake.requests().iter().filter(|r| is_title_call(r)).count(),
        1
    );
    assert_eq!(
        app.conversation(&me.access, &id).await["title"],
        "Trip to Lisbon"
    );
}

/// A first message of files alone is named by its files until the model's title comes, and
/// the title call is shown them (without text there used to be no title at all).
#[tokio::test]
async fn a_first_message_of_files_alone_is_titled_by_its_files() {
    let fake = FakeUpstream::start().await;
    let (app, [me]) = titling(&fake).start_as(["filer"]).await;
    app.upload(&me.access, "reports/q3-plan.txt", "ship the new importer")
        .await;
    let id = app.new_conversation(&me.access).await;
    fake.push(text("It is a plan to ship the importer.", 30, 6));
    fake.push(text("Q3 importer plan", 20, 3).delay_first_byte(Duration::from_millis(800)));
    let r = app
        .post_as(&me.access, &format!("/api/conversations/{id}/messages"))
        .json(&json!({"content": "", "attachments": ["reports/q3-plan.txt"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let meanwhile = app.conversation(&me.access, &id).await;
    assert_eq!(meanwhile["title"], "reports/q3-plan.txt");
    assert_eq!(meanwhile["title_auto"], true);

    let done = titled(&app, &me.access, &id, Duration::from_secs(10)).await;
    assert_eq!(done["title"], "Q3 importer plan");
    let call = fake
        .requests()
        .into_iter()
        .find(is_title_call)
        .expect("a title call");
    let shown = call["body"]["messages"][1]["content"].as_str().unwrap();
    assert!(shown.contains("reports/q3-plan.txt"), "{shown}");
}

#[tokio::test]
async fn a_title_the_user_chose_is_never_replaced() {
    let fake = FakeUpstream::start().await;
    let (app, [me]) = titling(&fake).start_as(["una"]).await;
    // Named at creation.
    let r = app
        .post_as(&me.access, "/api/conversations")
        .json(&json!({"title": "My own name"}))
        .send()
        .await
        .unwrap();
    let named: Value = r.json().await.unwrap();
    assert_eq!(named["title_auto"], false);
    let named = named["id"].as_str().unwrap().to_owned();
    app.chat(&me.access, &named, "hello").await;
    // Renamed before the first answer.
    let renamed = app.new_conversation(&me.access).await;
    let r = app
        .patch_as(&me.access, &format!("/api/conversations/{renamed}"))
        .json(&json!({"title": "Renamed by hand"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    app.chat(&me.access, &renamed, "hello again").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        fake.requests().iter().filter(|r| is_title_call(r)).count(),
        0
    );
    assert_eq!(
        app.conversation(&me.access, &named).await["title"],
        "My own name"
    );
    assert_eq!(
        app.conversation(&me.access, &renamed).await["title"],
        "Renamed by hand"
    );
}

#[tokio::test]
async fn no_budget_for_a_title_keeps_the_first_words() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, me]) = titling(&fake)
        .budget("vic", Some(2_000))
        .start_as(["boss", "vic"])
        .await;
    let id = app.new_conversation(&me.access).await;
    // The answer uses (more than) all that is left: the reservation is charged whole.
    fake.push(text("A long answer.", 5_000, 500));
    let events = app
        .chat(&me.access, &id, "summarise the report please")
        .await;
    assert_eq!(event_names(&events).last().unwrap(), "done");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        fake.requests().iter().filter(|r| is_title_call(r)).count(),
        0
    );
    let c = app.conversation(&me.access, &id).await;
    assert_eq!(c["title"], "summarise the report please");
    assert_eq!(c["title_auto"], true);
    let totals = app.budget_totals(me.user_id).await;
    assert_eq!(totals.spent, 2_000);
    assert_eq!((totals.reserved, totals.holds), (0, 0));
    assert_eq!(usage_rows(&app, &id).await.len(), 1);
}

#[tokio::test]
async fn a_failed_title_call_releases_its_hold_and_keeps_the_first_words() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, me]) = titling(&fake)
        .budget("wes", Some(100_000))
        .start_as(["boss", "wes"])
        .await;
    let id = app.new_conversation(&me.access).await;
    fake.push(text("Fine.", 100, 10));
    fake.push(Reply::error(500, "title exploded"));
    app.chat(&me.access, &id, "how are things").await;
    let until = Instant::now() + Duration::from_secs(5);
    while fake.requests().iter().filter(|r| is_title_call(r)).count() == 0 && Instant::now() < until
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = app.conversation(&me.access, &id).await;
    assert_eq!(
        (c["title"].as_str(), c["title_auto"].as_bool()),
        (Some("how are things"), Some(true))
    );
    let totals = app.budget_totals(me.user_id).await;
    assert_eq!((totals.spent, totals.reserved, totals.holds), (110, 0, 0));
}

#[tokio::test]
async fn the_demo_model_makes_a_title_from_the_first_words() {
    let (app, [me]) = TestApp::builder()
        .settings(|s| s.llm.auto_titles = true)
        .start_as(["dee"])
        .await;
    let id = app.new_conversation(&me.access).await;
    app.chat(
        &me.access,
        &id,
        "what is 2+3*4? I need it for homework today",
    )
    .await;
    let c = titled(&app, &me.access, &id, Duration::from_secs(5)).await;
    assert_eq!(c["title"], "what is 2+3*4 I need it");
    let rows = usage_rows(&app, &id).await;
    assert!(
        rows.iter()
            .any(|r| r.message.is_none() && r.model == "demo" && r.charged > 0),
        "{rows:?}"
    );
}
