//! Durable turns (DESIGN §7): `done` means stored across a database outage; a killed
//! process's turns end within seconds with their finished steps kept; cancel and user stops
//! reach a turn on another process.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::pg_cluster::PgCluster;
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::budget::start_child_with;

fn usage(i: u64, o: u64) -> Option<Usage> {
    Some(Usage::new(i, o))
}

/// Reads a whole SSE response.
async fn events_of(resp: reqwest::Response) -> Vec<SseEvent> {
    assert_eq!(resp.status(), 200);
    parse_sse(&resp.text().await.unwrap())
}

#[derive(diesel::QueryableByName)]
struct N {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

async fn count(db: &mut diesel_async::AsyncPgConnection, q: &'static str) -> i64 {
    diesel::sql_query(q).get_result::<N>(db).await.unwrap().n
}

#[tokio::test]
async fn done_means_stored_across_a_database_outage() {
    let cluster = PgCluster::start();
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "an answer worth keeping".into(),
            usage: usage(40, 20),
        }
        .delay_first_byte(Duration::from_millis(1500)),
    ));
    let (app, [_admin, s]) = TestApp::builder()
        .database(&cluster.url("agentchat"))
        .openai(&fake)
        .settings(|s| {
            s.database.create_if_missing = true;
            s.llm.turn_timeout = Duration::from_secs(60);
        })
        .budget("talker", Some(100_000))
        .start_as(["keeper", "talker"])
        .await;
    let mut convs = Vec::new();
    for _ in 0..8 {
        convs.push(app.new_conversation(&s.access).await);
    }
    let turns: Vec<_> = convs
        .iter()
        .map(|c| {
            let (client, url, token) = (app.client.clone(), app.url(""), s.access.clone());
            let c = c.clone();
            tokio::spawn(async move {
                let r = client
                    .post(format!("{url}/api/conversations/{c}/messages"))
                    .bearer_auth(token)
                    .json(&json!({"content": "hello"}))
                    .send()
                    .await
                    .unwrap();
                events_of(r).await
            })
        })
        .collect();
    // The starts commit (each stores its user message), then the database goes away while
    // every turn finishes: waited for, not timed, since a loaded machine starts slowly.
    let mut watch = app.db().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while count(
        &mut watch,
        "SELECT count(*) AS n FROM messages WHERE role = 'user'",
    )
    .await
        < 8
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the starts never committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(watch);
    cluster.down();
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.up();
    cluster.wait_ready().await;

    let mut db = app.db().await;
    let mut done = 0;
    for t in turns {
        let events = tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("the turn ended")
            .unwrap();
        let last = events.last().unwrap();
        assert_eq!(last.event, "done", "{:?}", last.data);
        done += 1;
        let id: uuid::Uuid = last.data["message_id"].as_str().unwrap().parse().unwrap();
        let stored = agentchat::db::models::message::existing(&mut db, &[id])
            .await
            .unwrap();
        assert_eq!(stored, [id], "`done` named a message that is not stored");
    }
    assert_eq!(done, 8);
    // Nothing is left claimed or held: every conversation takes the next message.
    assert_eq!(
        count(&mut db, "SELECT count(*) AS n FROM budget_holds").await,
        0
    );
    fake.set_default(Some(
        Reply::Text {
            text: "again".into(),
            usage: usage(40, 20),
        }
        .scripted(),
    ));
    for c in &convs {
        let events = app.chat(&s.access, c, "once more").await;
        assert_eq!(events.last().unwrap().event, "done");
        let stored = app.conversation(&s.access, c).await;
        assert_eq!(stored["messages"].as_array().unwrap().len(), 4, "{stored}");
    }
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
    assert_eq!(t.spent, 16 * 60);
    assert_eq!(t.spent, t.ledger);
}

#[tokio::test]
async fn a_killed_process_frees_its_conversation_within_seconds_and_keeps_the_tool_step() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "call_1".into(),
            "calculator".into(),
            r#"{"expression": "6*7"}"#.into(),
        )],
        usage: usage(50, 10),
    });
    fake.push(Reply::text("forty").hang());
    let app = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.durable.replica_timeout = Duration::from_secs(2))
        .start()
        .await;
    let mut child = start_child_with(
        &app.database_url,
        &fake.base_url_openai(),
        &[("AGENTCHAT_REPLICA_TIMEOUT_SECS", "2")],
    );
    let s = app.signed_up("crasher").await;
    app.set_budget(&s.access, s.user_id, Some(100_000)).await;
    let conv = app.new_conversation(&s.access).await;
    let url = format!("{}/api/conversations/{conv}/messages", child.address);
    let client = app.client.clone();
    let token = s.access.clone();
    let streaming = tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(&json!({"content": "what is 6*7"}))
            .send()
            .await
            .unwrap();
        let _ = r.text().await;
    });
    // The second model call has started: the tool step is committed before it.
    for _ in 0..100 {
        if fake.request_count() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(fake.request_count(), 2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    child.child.kill().unwrap();
    let _ = child.child.wait();
    let killed = std::time::Instant::now();
    let _ = streaming.await;

    fake.push(Reply::Text {
        text: "back again".into(),
        usage: usage(60, 5),
    });
    let events = loop {
        let r = app.send_message(&s.access, &conv, "are you there").await;
        if r.status() == 200 {
            break events_of(r).await;
        }
        assert_eq!(r.status(), 409, "{}", r.text().await.unwrap());
        assert!(
            killed.elapsed() < Duration::from_secs(15),
            "the dead process's conversation is still claimed"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(events.last().unwrap().event, "done");
    let stored = app.conversation(&s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ],
        "{stored}"
    );
    assert_eq!(m[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(m[2]["tool_call_id"], "call_1");
    assert!(m[2]["content"].as_str().unwrap().contains("42"), "{}", m[2]);
    assert_eq!(m[3]["status"], "incomplete");
    assert_eq!(m[3]["status_reason"], "interrupted");
    // The dead turn's hold was freed; only what was used is charged.
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
    assert_eq!(t.spent, t.ledger);
}

/// Streams a turn on `address` in the background; returns its events when it ends.
fn stream_turn(
    client: &reqwest::Client,
    address: &str,
    token: &str,
    conv: &str,
) -> tokio::task::JoinHandle<Vec<SseEvent>> {
    let url = format!("{address}/api/conversations/{conv}/messages");
    let (client, token) = (client.clone(), token.to_owned());
    tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(&json!({"content": "talk forever"}))
            .send()
            .await
            .unwrap();
        events_of(r).await
    })
}

async fn wait_for_requests(fake: &FakeUpstream, n: usize) {
    for _ in 0..100 {
        if fake.request_count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the upstream saw {} requests, not {n}",
        fake.request_count()
    );
}

#[tokio::test]
async fn cancel_and_disabling_a_user_stop_a_turn_on_another_process() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("words words words").hang()));
    let app = TestApp::builder().openai(&fake).start().await;
    let child = start_child_with(&app.database_url, &fake.base_url_openai(), &[]);
    let admin = app.signed_up("chief").await;
    let s = app.signed_up("member").await;

    // Cancel on this process, the turn on the other.
    let conv = app.new_conversation(&s.access).await;
    let turn = stream_turn(&app.client, &child.address, &s.access, &conv);
    wait_for_requests(&fake, 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A reloaded page sees that a reply is being generated.
    let running = app.conversation(&s.access, &conv).await;
    assert_eq!(running["active_turn"]["status"], "running", "{running}");
    assert!(running["active_turn"]["id"].is_string());
    let asked = std::time::Instant::now();
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(r.json::<Value>().await.unwrap()["cancelled"], true);
    let events = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .expect("the remote turn stopped")
        .unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(events.last().unwrap().data["finish_reason"], "cancelled");
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(
        stored["messages"][1]["status_reason"], "cancelled",
        "{stored}"
    );
    // Nothing runs now: cancel says so.
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"cancelled": false, "running": false})
    );

    // An admin disabling the user stops their turn on the other process.
    let conv = app.new_conversation(&s.access).await;
    let turn = stream_turn(&app.client, &child.address, &s.access, &conv);
    wait_for_requests(&fake, 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = app
        .patch_as(&admin.access, &format!("/api/admin/users/{}", s.user_id))
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .expect("the disabled user's turn stopped")
        .unwrap();
    assert_eq!(events.last().unwrap().data["finish_reason"], "cancelled");
    let mut db = app.db().await;
    let active = agentchat::turn::sql::is_active(&mut db, conv.parse().unwrap())
        .await
        .unwrap();
    assert!(!active);
    let stored: Vec<String> = {
        #[derive(diesel::QueryableByName)]
        struct R {
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
            status_reason: Option<String>,
        }
        diesel::sql_query(
            "SELECT status_reason FROM messages WHERE conversation_id = $1 AND role = 'assistant'",
        )
        .bind::<diesel::sql_types::Uuid, _>(conv.parse::<uuid::Uuid>().unwrap())
        .load::<R>(&mut db)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| r.status_reason)
        .collect()
    };
    assert_eq!(stored, ["access_revoked"]);
}

#[tokio::test]
async fn sigterm_drains_running_turns_then_stores_the_rest_as_shutdown() {
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder().openai(&fake).start().await;
    let mut child = start_child_with(
        &app.database_url,
        &fake.base_url_openai(),
        &[("AGENTCHAT_SHUTDOWN_GRACE_SECS", "2")],
    );
    let s = app.signed_up("drainer").await;
    // One turn finishes within the grace period, one never would.
    fake.push(
        Reply::Text {
            text: "made it".into(),
            usage: usage(30, 3),
        }
        .delay_first_byte(Duration::from_millis(1200)),
    );
    let quick = app.new_conversation(&s.access).await;
    let quick_turn = stream_turn(&app.client, &child.address, &s.access, &quick);
    wait_for_requests(&fake, 1).await;
    fake.push(Reply::text("and on and on").hang());
    let slow = app.new_conversation(&s.access).await;
    let slow_turn = stream_turn(&app.client, &child.address, &s.access, &slow);
    wait_for_requests(&fake, 2).await;
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());

    let events = tokio::time::timeout(Duration::from_secs(10), quick_turn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(events.last().unwrap().data["finish_reason"], "stop");
    assert_eq!(streamed_text(&events), "made it");
    let events = tokio::time::timeout(Duration::from_secs(10), slow_turn)
        .await
        .unwrap()
        .unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        (last.event.as_str(), &last.data["code"]),
        ("error", &json!("shutdown"))
    );
    let stored = app.conversation(&s.access, &slow).await;
    assert_eq!(stored["messages"][1]["status"], "incomplete", "{stored}");
    assert_eq!(stored["messages"][1]["status_reason"], "shutdown");
    assert_eq!(stored["messages"][1]["content"], streamed_text(&events));
    // The process ends by itself once drained, and its conversations are free.
    let mut exited = false;
    for _ in 0..100 {
        if child.child.try_wait().unwrap().is_some() {
            exited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(exited, "the drained process did not exit");
    let mut db = app.db().await;
    assert!(
        !agentchat::turn::sql::is_active(&mut db, slow.parse().unwrap())
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn every_event_carries_its_place_in_the_turn_as_its_sse_id() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::Text {
        text: "one two three".into(),
        usage: usage(10, 3),
    });
    let (app, [s]) = TestApp::builder().openai(&fake).start_as(["counted"]).await;
    let conv = app.new_conversation(&s.access).await;
    let body = app
        .send_message(&s.access, &conv, "count")
        .await
        .text()
        .await
        .unwrap();
    let ids: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .collect();
    let events = parse_sse(&body);
    assert_eq!(ids.len(), events.len(), "{body}");
    // `0` is turn_start; a text delta is where it ends in the step's text (13 bytes), usage
    // comes right after; `end` is the final event.
    assert_eq!(ids[0], "0");
    let last_delta = events
        .iter()
        .rposition(|e| e.event == "text_delta")
        .unwrap();
    assert_eq!(ids[last_delta], "1.13");
    assert_eq!(&ids[last_delta + 1..], ["1.14", "end"]);
    let done = app.conversation(&s.access, &conv).await;
    assert!(done["active_turn"].is_null(), "{done}");
}

#[tokio::test]
async fn a_reply_that_cannot_be_stored_is_an_error_and_frees_its_conversation_later() {
    let cluster = PgCluster::start();
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "lost to the outage".into(),
            usage: usage(40, 20),
        }
        .delay_first_byte(Duration::from_millis(1000)),
    ));
    let (app, [s]) = TestApp::builder()
        .database(&cluster.url("agentchat"))
        .openai(&fake)
        .settings(|s| {
            s.database.create_if_missing = true;
            // The deadline passes while the database is down: storing stops trying after the
            // minimum window (30 s).
            s.llm.turn_timeout = Duration::from_secs(5);
        })
        .budget("unlucky", Some(100_000))
        .start_as(["unlucky"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let turn = {
        let (client, url, token) = (app.client.clone(), app.url(""), s.access.clone());
        let conv = conv.clone();
        tokio::spawn(async move {
            let r = client
                .post(format!("{url}/api/conversations/{conv}/messages"))
                .bearer_auth(token)
                .json(&json!({"content": "hello"}))
                .send()
                .await
                .unwrap();
            events_of(r).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.down();
    let events = tokio::time::timeout(Duration::from_secs(60), turn)
        .await
        .expect("the turn ended")
        .unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.event, "error", "{:?}", events);
    assert_eq!(last.data["code"], "unavailable");
    assert!(events.iter().all(|e| e.event != "done"));

    cluster.up();
    cluster.wait_ready().await;
    // Released in the background once the database answers: no 409 for minutes.
    let mut free = false;
    for _ in 0..40 {
        let r = app.send_message(&s.access, &conv, "again").await;
        if r.status() == 200 {
            let events = events_of(r).await;
            assert_eq!(events.last().unwrap().event, "done");
            free = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(free, "the conversation stayed claimed");
    // Re-attaching to the lost turn ends with the error its client was given.
    let lost = events[0].data["message_id"].as_str().unwrap();
    let replay = events_of(
        app.get_as(
            &s.access,
            &format!("/api/conversations/{conv}/turns/{lost}/events?after=0"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(replay.last().unwrap().data, last.data, "{replay:?}");
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
    // Both model calls are charged what they used, and the ledger agrees.
    assert_eq!(t.spent, 120);
    assert_eq!(t.spent, t.ledger);
}

#[tokio::test]
async fn an_idempotency_key_never_runs_a_turn_twice() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::Text {
        text: "the first and only answer".into(),
        usage: usage(10, 5),
    });
    let (app, [s]) = TestApp::builder().openai(&fake).start_as(["retrier"]).await;
    let conv = app.new_conversation(&s.access).await;
    let send = |key: &str, content: &str| {
        app.post_as(&s.access, &format!("/api/conversations/{conv}/messages"))
            .header("Idempotency-Key", key)
            .json(&json!({"content": content}))
            .send()
    };
    let first = events_of(send("k-1", "hello").await.unwrap()).await;
    let again = events_of(send("k-1", "hello").await.unwrap()).await;
    assert_eq!(fake.request_count(), 1, "the retry ran the model again");
    assert_eq!(streamed_text(&again), "the first and only answer");
    let (a, b) = (first.last().unwrap(), again.last().unwrap());
    assert_eq!((a.event.as_str(), b.event.as_str()), ("done", "done"));
    assert_eq!(a.data["message_id"], b.data["message_id"]);
    assert_eq!(first[0].data["message_id"], again[0].data["message_id"]);
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 2, "{stored}");

    // The same key for another message is refused.
    expect_error(
        send("k-1", "something else").await.unwrap(),
        422,
        "idempotency_key_reused",
    )
    .await;
    let long = "k".repeat(201);
    expect_error(
        send(&long, "hello").await.unwrap(),
        400,
        "invalid_idempotency_key",
    )
    .await;

    // A retry while the first is still being answered follows it rather than start another.
    fake.push(Reply::text("slowly").hang());
    let running = {
        let r = send("k-2", "take your time").await.unwrap();
        assert_eq!(r.status(), 200);
        tokio::spawn(async move { parse_sse(&r.text().await.unwrap()) })
    };
    wait_for_requests(&fake, 2).await;
    let retry = {
        let r = send("k-2", "take your time").await.unwrap();
        assert_eq!(r.status(), 200);
        tokio::spawn(async move { parse_sse(&r.text().await.unwrap()) })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fake.request_count(), 2);
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let (first, again) = (running.await.unwrap(), retry.await.unwrap());
    assert_eq!(first[0].data["message_id"], again[0].data["message_id"]);
    assert_eq!(first.last().unwrap().data, again.last().unwrap().data);
    assert_eq!(again.last().unwrap().data["finish_reason"], "cancelled");
}
