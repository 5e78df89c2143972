//! Regression tests for the third outside review's findings (issue 29), each through the
//! running server; every test names the finding it proves.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::approvals::{
    answered, approval_id, approving, decide, file, finish, named, pending, write_call,
};

/// Finding 7: a disabled account's access token no longer replays a turn through the
/// `Idempotency-Key` path (nor does a revoked one), though the first request's turn stands.
#[tokio::test]
async fn a_disabled_accounts_token_replays_no_turn_by_its_idempotency_key() {
    let (app, [admin, s]) = TestApp::builder().start_as(["boss", "retrier"]).await;
    let conv = app.new_conversation(&s.access).await;
    let send = || {
        app.post_as(&s.access, &format!("/api/conversations/{conv}/messages"))
            .header("Idempotency-Key", "k-replay")
            .json(&json!({"content": "hello"}))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 200);
    let events = parse_sse(&first.text().await.unwrap());
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    // The retry replays while the account is admitted.
    assert_eq!(send().await.unwrap().status(), 200);

    let r = app
        .patch_as(&admin.access, &format!("/api/admin/users/{}", s.user_id))
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let replay = send().await.unwrap();
    let body = expect_error(replay, 401, "unauthenticated").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disabled"),
        "{body}"
    );
}

/// Finding 2: moving an admin-API MCP server to another origin without resending its
/// headers is refused (`headers_required`); the stored secrets never follow the URL. On the
/// same origin they are kept; sent again, the move is taken.
#[tokio::test]
async fn mcp_secret_headers_do_not_follow_a_moved_url() {
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let put = |body: Value| {
        app.client
            .put(app.url("/api/admin/mcp-servers/vault"))
            .bearer_auth(&admin.access)
            .json(&body)
            .send()
    };
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "vault", "url": "http://127.0.0.1:9/mcp",
                      "headers": {"X-Api-Key": "s3cret"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    let moved = put(json!({"url": "http://localhost:9/mcp"})).await.unwrap();
    expect_error(moved, 422, "headers_required").await;
    let kept = app.mcp_server(&admin.access, "vault").await;
    assert_eq!(kept["url"], "http://127.0.0.1:9/mcp", "nothing changed");

    // The same origin, another path: the stored headers stay.
    let r = put(json!({"url": "http://127.0.0.1:9/other"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s = app.mcp_server(&admin.access, "vault").await;
    assert_eq!(s["headers"], json!(["X-Api-Key"]));

    // Another origin with the headers sent again (or none at all): taken.
    let r = put(json!({"url": "http://localhost:9/mcp", "headers": {"X-Other": "v"}}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s = app.mcp_server(&admin.access, "vault").await;
    assert_eq!(
        (&s["url"], &s["headers"]),
        (&json!("http://localhost:9/mcp"), &json!(["X-Other"]))
    );
    let r = put(json!({"url": "http://127.0.0.1:9/mcp", "headers": {}}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Finding 8: a call waiting for its user is judged by the policy in force when it is
/// decided: after an admin tightens the tool to `admin`, the member can no longer approve
/// their own call; the row is re-routed to the admins, and an admin's decision runs it.
#[tokio::test]
async fn a_tightened_policy_judges_a_call_that_was_already_waiting() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    fake.push(write_call("c1", "t.txt", "tight"));
    fake.push(Reply::text("written"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let asked = &named(&events, "approval_required")[0].data;
    assert_eq!(asked["approver"], "user");
    let id = asked["approval_id"].as_str().unwrap().to_owned();

    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["calculator", "write_file"],
                   "approvals": {"write_file": "admin"}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = decide(
        &app,
        &alice.access,
        &id,
        json!({"decision": "approve"}),
        false,
    )
    .await;
    expect_error(r, 403, "admin_approval").await;
    assert_eq!(
        file(&app, &alice.access, "t.txt").await,
        None,
        "nothing ran"
    );
    let queue = pending(&app, &admin.access, "/api/admin/approvals?state=pending").await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["approver"], "admin", "re-routed: {queue:?}");

    let r = decide(
        &app,
        &admin.access,
        &id,
        json!({"decision": "approve"}),
        false,
    )
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["approval"]["approver"], "admin");
    assert_eq!(body["approval"]["decided_by"], "boss");
    answered(&app, &alice.access, &conv, "written").await;
}

/// Finding 12: an admin who decides a user's call and asks for the resumed turn's stream is
/// reading that user's conversation: a `conversation.view` row is written, as for any
/// admin reading.
#[tokio::test]
async fn an_admin_streaming_a_users_resumed_turn_is_recorded_as_a_reading() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "admin").start_as(["boss", "alice"]).await;
    fake.push(write_call("c1", "r.txt", "read"));
    fake.push(Reply::text("the secret answer"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    let id = approval_id(&events);
    let views = |app: &TestApp| {
        let token = admin.access.clone();
        let get = app
            .get_as(&token, "/api/admin/changes?kind=conversation.view")
            .send();
        async move {
            let page: Value = get.await.unwrap().json().await.unwrap();
            page["items"].as_array().unwrap().clone()
        }
    };
    assert!(views(&app).await.is_empty());

    let r = decide(
        &app,
        &admin.access,
        &id,
        json!({"decision": "approve"}),
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    let streamed = parse_sse(&r.text().await.unwrap());
    assert_eq!(streamed_text(&streamed), "the secret answer");
    let rows = views(&app).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["target_id"], json!(conv));
    assert_eq!(rows[0]["after"]["via"], "approval.decide");
    assert_eq!(rows[0]["after"]["owner"], "alice");
}

/// Finding 9: a custom tool may not take a name of the MCP form `{server}__{tool}`, so no MCP
/// server can take it over by listing `{tool}` and no `{server}__*` grant covers it; the
/// refusal says why.
#[tokio::test]
async fn custom_tools_cannot_take_the_mcp_name_form() {
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let r = app
        .post_as(&admin.access, "/api/admin/tools/custom")
        .json(&json!({"name": "everything__echo", "description": "mine",
                      "url_template": "https://example.com/echo", "method": "GET",
                      "parameters": {"type": "object", "properties": {}}}))
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 422, "reserved_name").await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("__"),
        "{body}"
    );
}

/// Finding 3: the MCP HTTP client follows no redirect to another origin: a server that
/// answers with a redirect elsewhere gets an error state, and the other origin never sees a
/// request (nor the secret headers that would have come with it).
#[tokio::test]
async fn the_mcp_client_follows_no_cross_origin_redirect() {
    use agentchat_tests::tiny_server::{Behaviour, TinyServer};
    let canary = TinyServer::start(Behaviour::Body("application/json", "{}".into())).await;
    let redirector = TinyServer::start(Behaviour::Redirect(canary.url("/mcp"))).await;
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "moved", "url": redirector.url("/mcp"),
                      "headers": {"X-Api-Key": "s3cret-redirected"}, "timeout_ms": 2000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let s = app.wait_mcp(&admin.access, "moved", "error", None).await;
    assert!(redirector.hits() > 0, "the server was tried: {s}");
    assert_eq!(
        canary.hits(),
        0,
        "followed to another origin: {:?}",
        canary.requests()
    );
}

/// Finding 4: an upload has a body deadline (and a minimum rate): a client trickling its
/// body loses the upload slot with a 408, and the next upload, refused while the slot was
/// held, then gets it.
#[tokio::test]
async fn a_trickled_upload_loses_its_slot_to_the_next_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (app, [slow, other]) = TestApp::builder()
        .settings(|s| {
            s.security.max_concurrent_uploads = 1;
            s.security.upload_deadline = std::time::Duration::from_secs(2);
        })
        .start_as(["trickler", "patient"])
        .await;
    let host = app.address.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "PUT /api/files/slow.txt HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {}\r\n\
         content-type: application/octet-stream\r\ncontent-length: 1000\r\n\r\n",
        slow.access
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let mut answer = Vec::new();
        for _ in 0..40 {
            if sock.write_all(b"a").await.is_err() {
                break;
            }
            let mut buf = [0u8; 512];
            match tokio::time::timeout(std::time::Duration::from_millis(250), sock.read(&mut buf))
                .await
            {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => {
                    answer.extend_from_slice(&buf[..n]);
                    break;
                }
                Err(_) => {}
            }
        }
        (
            String::from_utf8_lossy(&answer).into_owned(),
            started.elapsed(),
        )
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let put = || {
        app.client
            .put(app.url("/api/files/next.txt"))
            .bearer_auth(&other.access)
            .body("hello")
            .send()
    };
    expect_error(put().await.unwrap(), 429, "too_many_uploads").await;

    let (answer, took) = trickle.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(answer.contains("upload_too_slow"), "{answer:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(put().await.unwrap().status(), 201);
}

/// From the fault-injection run: a budget hold whose turn ended without settling it (the
/// turn's end could not be stored) is freed within a sweep interval, while a running turn's
/// hold is kept until the turn settles it.
#[tokio::test]
async fn no_hold_outlives_its_turn_by_more_than_the_sweep_interval() {
    use diesel_async::RunQueryDsl;
    let fake = FakeUpstream::start().await;
    fake.push(Reply::Hang);
    let (app, [admin, s]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.database.hold_sweep_interval = std::time::Duration::from_secs(1))
        .start_as(["boss", "spender"])
        .await;
    app.set_budget(&admin.access, s.user_id, Some(100_000))
        .await;
    let conv = app.new_conversation(&s.access).await;
    let running = app.send_message(&s.access, &conv, "hang on").await;
    assert_eq!(running.status(), 200);
    let mut live = app.budget_totals(s.user_id).await;
    for _ in 0..50 {
        if live.holds == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        live = app.budget_totals(s.user_id).await;
    }
    assert_eq!(live.holds, 1, "the running turn holds its call: {live:?}");

    // A hold left by an earlier turn of the same conversation that is gone (as a failed end
    // leaves it): an hour to live.
    let mut db = app.db().await;
    diesel::sql_query(
        "WITH h AS (INSERT INTO budget_holds \
                    (id, user_id, period, period_start, amount, expires_at, process_id, turn_id, \
                     conversation_id) \
                    SELECT gen_random_uuid(), user_id, period, period_start, 300, \
                           now() + interval '1 hour', process_id, gen_random_uuid(), \
                           conversation_id \
                    FROM budget_holds WHERE user_id = $1 LIMIT 1 RETURNING period, period_start) \
         UPDATE budget_periods b SET reserved = b.reserved + 300 FROM h \
          WHERE b.user_id = $1 AND b.period = h.period AND b.period_start = h.period_start",
    )
    .bind::<diesel::sql_types::Uuid, _>(s.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    assert_eq!(app.budget_totals(s.user_id).await.holds, 2);

    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let after = app.budget_totals(s.user_id).await;
    assert_eq!(
        after.holds, 1,
        "the orphan is freed, the live one kept: {after:?}"
    );
    assert_eq!(after.reserved, live.reserved, "{after:?}");

    // The running turn, cancelled, settles its own hold.
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    drop(running);
    for _ in 0..50 {
        if app.budget_totals(s.user_id).await.holds == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "the cancelled turn kept its hold: {:?}",
        app.budget_totals(s.user_id).await
    );
}
