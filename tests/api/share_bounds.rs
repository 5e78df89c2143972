//! Issue 41, finding 5 and two observations: reading through a link is bounded like the
//! owner's own reading — a window of the snapshot with a cursor, never the whole of it —
//! readings are limited per client address and per link (429 with `Retry-After`), and
//! counted in one row per link, viewer and minute instead of a row per request. An admin's
//! reading of another user's link is in the admin trail, and link URLs never come from the
//! request's `Host`.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::admin_changes::changes;

/// `n` question/answer pairs in `conversation`, contents `row 1`, `row 2`, ...
async fn fill(app: &TestApp, conversation: &str, from: i64, n: i64) {
    diesel::sql_query(
        "INSERT INTO messages (id, conversation_id, role, content) \
         SELECT gen_random_uuid(), $1, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, \
                'row ' || g \
           FROM generate_series($2, $3) g ORDER BY g",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(conversation).unwrap())
    .bind::<diesel::sql_types::BigInt, _>(from)
    .bind::<diesel::sql_types::BigInt, _>(from + n - 1)
    .execute(&mut app.db().await)
    .await
    .unwrap();
}

/// A new link to `conversation` (asserting 201); its JSON.
async fn link(app: &TestApp, token: &str, conversation: &str, scope: &str) -> Value {
    let r = app
        .post_as(token, &format!("/api/conversations/{conversation}/shares"))
        .json(&json!({ "scope": scope }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

/// `GET path` as nobody, from `address` when given (through a trusted proxy).
async fn anonymous(app: &TestApp, path: &str, address: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(app.url(path));
    if let Some(a) = address {
        req = req.header("X-Forwarded-For", a);
    }
    req.send().await.unwrap()
}

fn contents(page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[derive(diesel::QueryableByName)]
struct Counted {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    rows: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    views: i64,
}

/// The `share_views` rows of link `id` and the readings they count.
async fn counted(app: &TestApp, id: &str) -> (i64, i64) {
    let c: Counted = diesel::sql_query(
        "SELECT count(*) AS rows, COALESCE(sum(views), 0)::BIGINT AS views \
           FROM share_views WHERE share_id = $1",
    )
    .bind::<diesel::sql_types::Text, _>(id)
    .get_result(&mut app.db().await)
    .await
    .unwrap();
    (c.rows, c.views)
}

#[tokio::test]
async fn a_long_shared_conversation_is_read_a_window_at_a_time_within_its_snapshot() {
    let (app, [root, reader]) = TestApp::builder().start_as(["root", "reader"]).await;
    let conv = app.new_conversation(&root.access).await;
    fill(&app, &conv, 1, 600).await;
    let shared = link(&app, &root.access, &conv, "public").await;
    let id = shared["id"].as_str().unwrap();
    // Written after the link was made: never shown through it.
    fill(&app, &conv, 601, 10).await;

    let path = format!("/api/shares/{id}");
    let r = anonymous(&app, &path, None).await;
    assert_eq!(r.status(), 200);
    let first: Value = r.json().await.unwrap();
    let latest = contents(&first);
    assert_eq!(latest.len(), 200, "the default window, not the snapshot");
    assert_eq!(latest[0], "row 401");
    assert_eq!(latest.last().unwrap(), "row 600");
    assert!(
        first["messages_before"].is_string(),
        "{}",
        first["messages_before"]
    );

    // Paged back, every message of the snapshot once and in order.
    let mut all: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?limit=150&before={c}"),
            None => format!("{path}?limit=150"),
        };
        let page: Value = anonymous(&app, &url, None).await.json().await.unwrap();
        let mut older = contents(&page);
        assert!(older.len() <= 150);
        older.append(&mut all);
        all = older;
        match page["messages_before"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = (1..=600).map(|n| format!("row {n}")).collect();
    assert_eq!(all, expected);
    // A window is at most 500, whatever is asked; a cursor of a later message stays
    // within the snapshot.
    let big: Value = anonymous(&app, &format!("{path}?limit=100000"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(contents(&big).len(), 500);
    let beyond: Value = anonymous(&app, &format!("{path}?before=m999999&limit=1"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(contents(&beyond), ["row 600"]);
    expect_error(
        anonymous(&app, &format!("{path}?before=nope"), None).await,
        400,
        "invalid_cursor",
    )
    .await;

    // A copy of the whole snapshot (read and written a chunk at a time) holds all of it.
    let last = first["messages"][199]["id"].as_str().unwrap();
    let r = app
        .post_as(&reader.access, &format!("{path}/fork"))
        .json(&json!({ "at_message_id": last }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let copy: Value = r.json().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let n: N = diesel::sql_query("SELECT count(*) AS n FROM messages WHERE conversation_id = $1")
        .bind::<diesel::sql_types::Uuid, _>(
            uuid::Uuid::parse_str(copy["id"].as_str().unwrap()).unwrap(),
        )
        .get_result(&mut app.db().await)
        .await
        .unwrap();
    assert_eq!(n.n, 600);
}

#[tokio::test]
async fn readings_are_counted_per_viewer_and_minute_not_a_row_each() {
    let (app, [root, reader]) = TestApp::builder()
        .settings(|s| {
            s.sharing.reads_per_minute_per_address = 0;
            s.sharing.reads_per_minute_per_link = 0;
        })
        .start_as(["root", "reader"])
        .await;
    let conv = app.new_conversation(&root.access).await;
    fill(&app, &conv, 1, 4).await;
    let shared = link(&app, &root.access, &conv, "public").await;
    let id = shared["id"].as_str().unwrap();
    for _ in 0..300 {
        let r = anonymous(&app, &format!("/api/shares/{id}"), None).await;
        assert_eq!(r.status(), 200);
    }
    for _ in 0..5 {
        let r = app
            .get_as(&reader.access, &format!("/api/shares/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let (rows, views) = counted(&app, id).await;
    assert_eq!(views, 305, "every reading counted");
    // Two viewers (nobody from one address, and the reader), each in a minute or two.
    assert!((2..=4).contains(&rows), "{rows} rows for 305 readings");
    // The owner sees every reading counted.
    let list: Value = app
        .get_as(&root.access, &format!("/api/conversations/{conv}/shares"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"][0]["views"], 305);
    assert!(list["items"][0]["last_viewed_at"].is_string());
}

#[tokio::test]
async fn readings_past_an_address_or_a_link_rate_are_429_with_retry_after() {
    let (app, [root, reader]) = TestApp::builder()
        .settings(|s| {
            s.security.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            s.sharing.reads_per_minute_per_address = 2;
            s.sharing.reads_per_minute_per_link = 5;
        })
        .start_as(["root", "reader"])
        .await;
    let conv = app.new_conversation(&root.access).await;
    fill(&app, &conv, 1, 2).await;
    let id = link(&app, &root.access, &conv, "public").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = link(&app, &root.access, &conv, "public").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/shares/{id}");

    // One address: its two readings a minute, then 429 (files and copies count too).
    for _ in 0..2 {
        assert_eq!(
            anonymous(&app, &path, Some("192.0.2.1")).await.status(),
            200
        );
    }
    let r = anonymous(&app, &path, Some("192.0.2.1")).await;
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let body = expect_error(r, 429, "rate_limited").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("address"),
        "{body}"
    );
    let r = anonymous(&app, &format!("{path}/files/notes.txt"), Some("192.0.2.1")).await;
    expect_error(r, 429, "rate_limited").await;
    let r = app
        .post_as(&reader.access, &format!("{path}/fork"))
        .header("X-Forwarded-For", "192.0.2.1")
        .json(&json!({ "at_message_id": uuid::Uuid::new_v4() }))
        .send()
        .await
        .unwrap();
    expect_error(r, 429, "rate_limited").await;

    // Many addresses: the link's five readings a minute, then 429 for everyone.
    for a in ["192.0.2.2", "192.0.2.2", "192.0.2.3"] {
        assert_eq!(anonymous(&app, &path, Some(a)).await.status(), 200, "{a}");
    }
    let r = anonymous(&app, &path, Some("192.0.2.4")).await;
    let body = expect_error(r, 429, "rate_limited").await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("link"),
        "{body}"
    );
    // Another link is not held back by this one's readers.
    let r = anonymous(&app, &format!("/api/shares/{other}"), Some("192.0.2.5")).await;
    assert_eq!(r.status(), 200);
    // Refused readings are not counted: five of this link were served.
    assert_eq!(counted(&app, &id).await.1, 5);
}

#[tokio::test]
async fn an_admin_reading_another_users_link_is_in_the_admin_trail() {
    let (app, [root, alice, bob]) = TestApp::builder().start_as(["root", "alice", "bob"]).await;
    let conv = app.new_conversation(&alice.access).await;
    fill(&app, &conv, 1, 2).await;
    let id = link(&app, &alice.access, &conv, "org").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The admin list hands the admin the link...
    let listed: Value = app
        .get_as(&root.access, "/api/admin/shares")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"][0]["id"], id);
    let before = changes(&app, &root.access, "?kind=conversation.view").await;
    assert_eq!(before["items"].as_array().unwrap().len(), 0);
    // ...members and the owner reading it are not admins' readings...
    for who in [&alice, &bob] {
        let r = app
            .get_as(&who.access, &format!("/api/shares/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert_eq!(
        changes(&app, &root.access, "?kind=conversation.view").await["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    // ...and the admin reading it is.
    let r = app
        .get_as(&root.access, &format!("/api/shares/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let after = changes(&app, &root.access, "?kind=conversation.view").await;
    let rows = after["items"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{after}");
    assert_eq!(rows[0]["actor_name"], "root");
    assert_eq!(rows[0]["target_id"], conv);
    assert_eq!(rows[0]["after"]["via"], "share");
    assert_eq!(rows[0]["after"]["owner_id"], alice.user_id.to_string());
    // The trail names the link by a prefix too short to open it.
    let named = rows[0]["after"]["share"].as_str().unwrap();
    assert!(id.starts_with(named.trim_end_matches('…')) && named.len() < id.len());
}

#[tokio::test]
async fn link_urls_never_come_from_the_requests_host() {
    let (app, [root]) = TestApp::builder().start_as(["root"]).await;
    let conv = app.new_conversation(&root.access).await;
    fill(&app, &conv, 1, 2).await;
    let own = format!("http://127.0.0.1:{}/s/", app.port);
    for (header, value) in [
        ("Host", "evil.example"),
        ("X-Forwarded-Host", "evil.example"),
        ("Forwarded", "host=evil.example;proto=https"),
    ] {
        let r = app
            .post_as(&root.access, &format!("/api/conversations/{conv}/shares"))
            .header(header, value)
            .json(&json!({"scope": "org"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let made: Value = r.json().await.unwrap();
        let url = made["url"].as_str().unwrap();
        assert!(url.starts_with(&own), "{header}: {url}");
        for path in [
            "/api/admin/shares",
            &format!("/api/conversations/{conv}/shares"),
        ] {
            let listed: Value = app
                .get_as(&root.access, path)
                .header(header, value)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for item in listed["items"].as_array().unwrap() {
                let url = item["url"].as_str().unwrap();
                assert!(url.starts_with(&own), "{path} {header}: {url}");
            }
        }
    }
}

#[tokio::test]
async fn link_urls_follow_public_url_when_it_is_set() {
    let (app, [root]) = TestApp::builder()
        .settings(|s| s.public_url = Some("https://chat.example.com/".into()))
        .start_as(["root"])
        .await;
    let conv = app.new_conversation(&root.access).await;
    fill(&app, &conv, 1, 2).await;
    let made = link(&app, &root.access, &conv, "org").await;
    let id = made["id"].as_str().unwrap();
    assert_eq!(made["url"], format!("https://chat.example.com/s/{id}"));
}
