//! An assistant's collections (issue 32): its chats search them by default, and only where
//! the user may read them — a preset never widens a grant.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use reqwest::Method;
use serde_json::json;

use crate::knowledge_support::{collection, on_fake, send, settled, upload};

#[tokio::test]
async fn an_assistant_searches_its_collections_within_the_users_grants() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = on_fake(&fake).start_as(["boss", "ann"]).await;
    let handbook = collection(&app, &admin.access, "Handbook").await;
    let private = collection(&app, &admin.access, "Board minutes").await;
    let other = collection(&app, &admin.access, "Other team").await;
    for (c, file, text) in [
        (
            &handbook,
            "leave.txt",
            "Vacation policy: every employee gets thirty vacation days.",
        ),
        (
            &private,
            "board.txt",
            "Vacation policy: the board decided secret vacation bonuses.",
        ),
        (
            &other,
            "other.txt",
            "Vacation policy: the other team plans vacation rotations.",
        ),
    ] {
        upload(&app, &admin.access, c, file, text.as_bytes().to_vec()).await;
        settled(&app, &admin.access, c, file).await;
    }
    // Members may read the handbook and the other team's, not the board minutes.
    for c in [&handbook, &other] {
        let (status, _) = send(
            &app,
            Method::PUT,
            &admin.access,
            &format!("/api/collections/{c}/grants"),
            Some(json!({"roles": ["member"]})),
        )
        .await;
        assert_eq!(status, 200);
    }
    let (status, a) = send(&app, Method::POST, &admin.access, "/api/admin/assistants", Some(json!({
        "name": "hr", "instructions": "Answer from the handbook.", "tools": ["search_knowledge"],
        "collections": [handbook, private],
    }))).await;
    assert_eq!(status, 201, "{a}");
    let (_, listed) = send(&app, Method::GET, &ann.access, "/api/assistants", None).await;
    assert_eq!(
        listed["items"][0]["collections"],
        json!([{"id": handbook, "name": "Handbook"}])
    );

    let (_, conv) = send(
        &app,
        Method::POST,
        &ann.access,
        "/api/conversations",
        Some(json!({"assistant_id": a["id"]})),
    )
    .await;
    let conv = conv["id"].as_str().unwrap().to_owned();
    fake.push(Reply::tool_call(
        "s1",
        "search_knowledge",
        json!({"query": "vacation policy"}).to_string(),
    ));
    fake.push(Reply::text("Thirty days."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "how much vacation do I get")
        .await;
    let result = fake.requests()[before + 1]["body"]["messages"].to_string();
    assert!(result.contains("thirty vacation days"), "{result}");
    assert!(
        !result.contains("secret vacation bonuses"),
        "a collection the user may not read: {result}"
    );
    assert!(
        !result.contains("rotations"),
        "a collection outside the assistant's: {result}"
    );
}
