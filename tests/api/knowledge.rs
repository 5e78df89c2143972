//! Knowledge collections (issue 31, DESIGN §13): private until an admin shares them with a
//! role, searched by `search_knowledge` inside the caller's grants only, cited by answers
//! (stored with the message, opening the passage); off with a clear reason on a database
//! without pgvector, where everything else keeps working.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use reqwest::Method;
use serde_json::{json, Value};

use crate::knowledge_support::{collection, on_fake, search, send, settled, strings, upload};

const REFUNDS: &str = "# Refunds\n\nRefunds are paid within thirty days of the return \
    arriving at our warehouse in Leeds. Keep the receipt.\n";
const HANDBOOK: &str = "# Holidays\n\nEvery employee gets twenty-eight days of paid \
    holiday per year, booked through the holiday planner.\n";

#[tokio::test]
async fn collections_are_private_until_an_admin_shares_them_with_a_role() {
    let fake = FakeUpstream::start().await;
    let (app, [root, ann, bob]) = on_fake(&fake).start_as(["root", "ann", "bob"]).await;
    let mine = collection(&app, &ann.access, "Ann's notes").await;
    upload(&app, &ann.access, &mine, "refunds.md", REFUNDS.into()).await;
    assert_eq!(
        settled(&app, &ann.access, &mine, "refunds.md").await["state"],
        "ready"
    );
    assert!(!search(&app, &ann.access, "refunds warehouse", 5)
        .await
        .is_empty());

    // Nobody else reads it: not in lists, not in search (admins included); by id, only an
    // admin sees its metadata (to share it), marked not readable.
    for who in [&bob, &root] {
        let (_, list) = send(&app, Method::GET, &who.access, "/api/collections", None).await;
        assert_eq!(list["items"], json!([]), "{list}");
        let (status, c) = send(
            &app,
            Method::GET,
            &who.access,
            &format!("/api/collections/{mine}"),
            None,
        )
        .await;
        if who.access == root.access {
            assert_eq!((status, &c["readable"]), (200, &json!(false)), "{c}");
        } else {
            assert_eq!(status, 404);
        }
        assert!(search(&app, &who.access, "refunds warehouse", 5)
            .await
            .is_empty());
    }
    let (status, _) = upload(&app, &bob.access, &mine, "x.md", b"bob was here".to_vec()).await;
    assert_eq!(status, 404);
    let (status, body) = send(
        &app,
        Method::PUT,
        &bob.access,
        &format!("/api/collections/{mine}/grants"),
        Some(json!({"roles": ["member"]})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );

    // The admin's team collection, shared with members: bob reads and searches it, but
    // may not change it; its grant is in the admin trail.
    let team = collection(&app, &root.access, "Handbook").await;
    upload(&app, &root.access, &team, "holidays.md", HANDBOOK.into()).await;
    settled(&app, &root.access, &team, "holidays.md").await;
    assert!(search(&app, &bob.access, "holiday days", 5)
        .await
        .is_empty());
    let (status, shared) = send(
        &app,
        Method::PUT,
        &root.access,
        &format!("/api/collections/{team}/grants"),
        Some(json!({"roles": ["member"]})),
    )
    .await;
    assert_eq!(
        (status, &shared["roles"]),
        (200, &json!(["member"])),
        "{shared}"
    );
    let hits = search(&app, &bob.access, "paid holiday days", 5).await;
    assert_eq!(hits[0]["file"], "holidays.md", "{hits:?}");
    assert!(
        hits.iter().all(|h| h["collection_id"] == team.as_str()),
        "{hits:?}"
    );
    let (_, list) = send(&app, Method::GET, &bob.access, "/api/collections", None).await;
    assert_eq!(list["items"][0]["can_manage"], false);
    let (status, _) = upload(&app, &bob.access, &team, "x.md", b"bob was here".to_vec()).await;
    assert_eq!(status, 403);
    let (status, _) = send(
        &app,
        Method::DELETE,
        &bob.access,
        &format!("/api/collections/{team}"),
        None,
    )
    .await;
    assert_eq!(status, 403);
    let kinds = strings(&app, "SELECT kind AS v FROM admin_changes").await;
    assert!(kinds.contains(&"collection.share".to_owned()), "{kinds:?}");
    let (status, body) = send(
        &app,
        Method::PUT,
        &root.access,
        &format!("/api/collections/{team}/grants"),
        Some(json!({"roles": ["nope"]})),
    )
    .await;
    assert_eq!(status, 400, "{body}");

    // Pins: only the conversation's owner, only collections they may read.
    let conv = app.new_conversation(&bob.access).await;
    let pins = format!("/api/conversations/{conv}/collections");
    let (status, _) = send(
        &app,
        Method::PUT,
        &bob.access,
        &pins,
        Some(json!({"collections": [mine]})),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(
        &app,
        Method::PUT,
        &ann.access,
        &pins,
        Some(json!({"collections": [mine]})),
    )
    .await;
    assert_eq!(status, 404);
    let (status, pinned) = send(
        &app,
        Method::PUT,
        &bob.access,
        &pins,
        Some(json!({"collections": [team]})),
    )
    .await;
    assert_eq!(
        (status, pinned["items"][0]["name"].as_str()),
        (200, Some("Handbook"))
    );
}

#[tokio::test]
async fn the_agent_searches_with_the_tool_and_its_answer_cites_the_passage() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake).start_as(["ann"]).await;
    let c = collection(&app, &ann.access, "Policies").await;
    upload(&app, &ann.access, &c, "refunds.md", REFUNDS.into()).await;
    let file = settled(&app, &ann.access, &c, "refunds.md").await;
    assert_eq!(
        (file["state"].as_str(), file["embedding_model"].as_str()),
        (Some("ready"), Some("embed"))
    );
    let chunk = strings(&app, "SELECT id::text AS v FROM chunks").await[0].clone();

    fake.push(Reply::tool_call(
        "c1",
        "search_knowledge",
        r#"{"query": "refund days"}"#,
    ));
    fake.push(Reply::text(format!(
        "Refunds are paid within thirty days [K{chunk}]."
    )));
    let conv = app.new_conversation(&ann.access).await;
    app.chat(&ann.access, &conv, "how long do refunds take?")
        .await;

    // The model saw the passage with its ref and file.
    let requests = fake.requests();
    let seen = requests.last().unwrap().to_string();
    assert!(
        seen.contains(&format!("K{chunk}")) && seen.contains("refunds.md"),
        "{seen}"
    );
    // The answer's citation is stored with it and opens the passage.
    let stored = app.conversation(&ann.access, &conv).await;
    let answer = stored["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let cite = &answer["citations"][0];
    assert_eq!(
        (cite["n"].as_u64(), cite["file"].as_str()),
        (Some(1), Some("refunds.md")),
        "{answer}"
    );
    let passage = format!(
        "/api/collections/{c}/files/{}/passage?start={}&end={}",
        cite["file_id"].as_str().unwrap(),
        cite["byte_start"],
        cite["byte_end"]
    );
    let (status, p) = send(&app, Method::GET, &ann.access, &passage, None).await;
    assert_eq!(status, 200, "{p}");
    assert!(p["text"].as_str().unwrap().contains("thirty days"), "{p}");
    // A tool like every other: an audit row.
    let audit = strings(
        &app,
        "SELECT concat_ws(',', tool, outcome) AS v FROM audit_log",
    )
    .await;
    assert_eq!(audit, vec!["search_knowledge,ok".to_owned()]);
    // The embedding tokens were charged at the model's price: the uploader's ingestion, then
    // the search's query (issue 41.7).
    let usage = strings(
        &app,
        "SELECT concat_ws(',', model, (input_tokens > 0)::text, (cost > 0)::text) AS v \
         FROM usage_records WHERE conversation_id IS NULL",
    )
    .await;
    assert_eq!(usage, vec!["embed,true,true".to_owned(); 2]);
}

#[tokio::test]
async fn a_role_without_the_tool_is_refused_and_a_marker_outside_the_grants_cites_nothing() {
    let fake = FakeUpstream::start().await;
    let (app, [root, ann]) = on_fake(&fake)
        .role("member", json!({"tools": []}))
        .start_as(["root", "ann"])
        .await;
    let c = collection(&app, &root.access, "Secrets").await;
    upload(&app, &root.access, &c, "refunds.md", REFUNDS.into()).await;
    settled(&app, &root.access, &c, "refunds.md").await;
    let chunk = strings(&app, "SELECT id::text AS v FROM chunks").await[0].clone();

    fake.push(Reply::tool_call(
        "c1",
        "search_knowledge",
        r#"{"query": "refunds"}"#,
    ));
    fake.push(Reply::text(format!("I cannot see it, but [K{chunk}].")));
    let conv = app.new_conversation(&ann.access).await;
    app.chat(&ann.access, &conv, "refunds?").await;
    let audit = strings(
        &app,
        "SELECT concat_ws(',', tool, outcome) AS v FROM audit_log",
    )
    .await;
    assert_eq!(audit, vec!["search_knowledge,refused".to_owned()]);
    let stored = app.conversation(&ann.access, &conv).await;
    let answer: Value = stored["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(answer.get("citations").is_none(), "{answer}");
}

#[tokio::test]
async fn without_pgvector_collections_are_off_with_a_reason_and_chat_still_works() {
    let (app, [ann]) = TestApp::builder().start_as(["ann"]).await;
    let (status, k) = send(&app, Method::GET, &ann.access, "/api/knowledge", None).await;
    assert_eq!((status, &k["available"]), (200, &json!(false)));
    assert!(k["reason"].as_str().unwrap().contains("pgvector"), "{k}");
    let (status, body) = send(&app, Method::GET, &ann.access, "/api/collections", None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("knowledge_unavailable"))
    );
    let conv = app.new_conversation(&ann.access).await;
    let events = app.chat(&ann.access, &conv, "what is 2+2").await;
    assert!(streamed_text(&events).contains('4'), "{events:?}");
}
