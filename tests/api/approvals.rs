//! Approval by policy (DESIGN §9) through the running server: a call a role says a person must
//! confirm pauses the turn (stored, holding nothing), a decision lets it go on — on any
//! process, after a restart — with exactly the stored arguments; denials and expiry reach the
//! model as tool errors; every decision lands on the call's audit row.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::budget::start_child_with;

/// A server on the fake model whose approvals expire after `ttl`.
fn with_ttl(fake: &FakeUpstream, ttl: Duration) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .settings(move |s| s.durable.approval_ttl = ttl)
}

/// A server whose `member` role allows `calculator` and `write_file`, with `write_file`
/// needing `approver`'s decision.
pub(crate) fn approving<'a>(fake: &'a FakeUpstream, approver: &str) -> AppBuilder<'a> {
    with_ttl(fake, Duration::from_secs(3600)).role(
        "member",
        json!({"tools": ["calculator", "write_file"],
               "approvals": {"write_file": approver}}),
    )
}

pub(crate) fn write_call(id: &str, path: &str, content: &str) -> Reply {
    Reply::tool_call(
        id,
        "write_file",
        json!({"path": path, "content": content}).to_string(),
    )
}

pub(crate) fn named<'a>(events: &'a [SseEvent], name: &str) -> Vec<&'a SseEvent> {
    events.iter().filter(|e| e.event == name).collect()
}

/// The id of the first approval a turn asked for.
pub(crate) fn approval_id(events: &[SseEvent]) -> String {
    let first = named(events, "approval_required").into_iter().next();
    let first = first.unwrap_or_else(|| panic!("no approval asked: {events:?}"));
    first.data["approval_id"].as_str().unwrap().to_owned()
}

pub(crate) fn finish(events: &[SseEvent]) -> String {
    let last = events.last().expect("events");
    assert_eq!(last.event, "done", "{events:?}");
    last.data["finish_reason"].as_str().unwrap().to_owned()
}

/// Decides an approval; `stream`: asks for the resumed turn's events.
pub(crate) async fn decide(
    app: &TestApp,
    token: &str,
    id: &str,
    body: Value,
    stream: bool,
) -> reqwest::Response {
    let mut req = app
        .post_as(token, &format!("/api/approvals/{id}"))
        .json(&body);
    if stream {
        req = req.header("accept", "text/event-stream");
    }
    req.send().await.unwrap()
}

/// Approves the approval `id` and follows the resumed turn to its end.
pub(crate) async fn approve_and_follow(app: &TestApp, token: &str, id: &str) -> Vec<SseEvent> {
    let r = decide(app, token, id, json!({"decision": "approve"}), true).await;
    parse_sse(&r.text().await.unwrap())
}

pub(crate) async fn pending(app: &TestApp, token: &str, path: &str) -> Vec<Value> {
    let r: Value = app
        .get_as(token, path)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["items"].as_array().unwrap().clone()
}

pub(crate) async fn file(app: &TestApp, token: &str, path: &str) -> Option<String> {
    let r = app
        .get_as(token, &format!("/api/files/{path}"))
        .send()
        .await
        .unwrap();
    (r.status() == 200).then_some(r.text().await.unwrap())
}

async fn audit(app: &TestApp, admin: &str, query: &str) -> Vec<Value> {
    pending(app, admin, &format!("/api/admin/audit?{query}")).await
}

/// Waits until the conversation's last message is an assistant answer with this text.
pub(crate) async fn answered(app: &TestApp, token: &str, conv: &str, text: &str) -> Value {
    for _ in 0..100 {
        let c = app.conversation(token, conv).await;
        let last = c["messages"].as_array().unwrap().last().cloned().unwrap();
        if last["role"] == "assistant" && last["content"] == text {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the turn never went on: {:?}",
        app.conversation(token, conv).await
    );
}

/// The tool results the model was given in request `n`.
fn tool_results(fake: &FakeUpstream, n: usize) -> Vec<Value> {
    fake.requests()[n]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_user_approval_pauses_the_turn_holding_nothing_and_runs_exactly_the_approved_arguments() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    app.set_budget(&admin.access, alice.user_id, Some(100_000))
        .await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "c1".into(),
            "write_file".into(),
            json!({"path": "a.txt", "content": "approved text"}).to_string(),
        )],
        usage: Some(Usage::new(30, 10)),
    });
    fake.push(Reply::text("written"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write it").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let asked = named(&events, "approval_required");
    assert_eq!(asked.len(), 1, "{events:?}");
    let asked = &asked[0].data;
    assert_eq!(asked["tool_call_id"], "c1");
    assert_eq!(asked["name"], "write_file");
    assert_eq!(asked["approver"], "user");
    assert_eq!(
        asked["arguments"],
        json!({"path": "a.txt", "content": "approved text"})
    );
    assert!(asked["expires_at"].is_string());
    assert!(named(&events, "tool_result").is_empty(), "nothing ran");

    // Nothing is held: no reservation, the conversation readable; nothing ran.
    let held = app.budget_totals(alice.user_id).await;
    assert_eq!((held.reserved, held.holds), (0, 0), "{held:?}");
    assert!(held.spent > 0, "the model call that asked is charged");
    let c = app.conversation(&alice.access, &conv).await;
    assert_eq!(c["messages"].as_array().unwrap().len(), 2, "{c}");
    assert_eq!(file(&app, &alice.access, "a.txt").await, None);
    // A new message would land between the call and its result: refused, saying why.
    let r = app.send_message(&alice.access, &conv, "hello?").await;
    expect_error(r, 409, "approval_pending").await;

    let mine = pending(&app, &alice.access, "/api/approvals?state=pending").await;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["id"], asked["approval_id"]);
    let id = mine[0]["id"].as_str().unwrap().to_owned();

    // The stored model message is rewritten: what runs is what was approved, not what the
    // history says now.
    let mut db = app.db().await;
    diesel::sql_query(
        "UPDATE messages SET tool_calls = jsonb_build_array(jsonb_build_object( \
           'id', 'c1', 'name', 'write_file', \
           'arguments', jsonb_build_object('path', 'evil.txt', 'content', 'evil'))) \
         WHERE role = 'assistant'",
    )
    .execute(&mut db)
    .await
    .unwrap();

    let r = decide(
        &app,
        &alice.access,
        &id,
        json!({"decision": "approve"}),
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let resumed = parse_sse(&r.text().await.unwrap());
    assert_eq!(
        event_names(&resumed),
        ["turn_start", "tool_result", "text_delta", "usage", "done"],
        "{resumed:?}"
    );
    assert_eq!(resumed[1].data["success"], true, "{resumed:?}");
    assert_eq!(finish(&resumed), "stop");
    assert_eq!(streamed_text(&resumed), "written");
    assert_eq!(
        file(&app, &alice.access, "a.txt").await.as_deref(),
        Some("approved text")
    );
    assert_eq!(file(&app, &alice.access, "evil.txt").await, None);
    let results = tool_results(&fake, 1);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_call_id"], "c1");

    // Decided once only; the budget holds nothing afterwards either.
    let again = decide(&app, &alice.access, &id, json!({"decision": "deny"}), false).await;
    expect_error(again, 409, "already_decided").await;
    let held = app.budget_totals(alice.user_id).await;
    assert_eq!((held.reserved, held.holds), (0, 0));
    assert!(pending(&app, &alice.access, "/api/approvals?state=pending")
        .await
        .is_empty());

    let rows = audit(&app, &admin.access, "tool=write_file").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["outcome"], "ok");
    assert_eq!(rows[0]["approval_policy"], "user");
    assert_eq!(rows[0]["approval_decision"], "approved");
    assert_eq!(rows[0]["approval_decided_by"], "alice");
    assert!(rows[0]["approval_decided_at"].is_string());
    // The conversation takes messages again.
    fake.push(Reply::text("hi"));
    let events = app.chat(&alice.access, &conv, "thanks").await;
    assert_eq!(finish(&events), "stop");
}

#[tokio::test]
async fn an_admin_approval_is_decided_by_an_admin_only() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice, bob]) = approving(&fake, "admin")
        .start_as(["boss", "alice", "bob"])
        .await;
    fake.push(write_call("c1", "b.txt", "by the book"));
    fake.push(Reply::text("done it"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let asked = &named(&events, "approval_required")[0].data;
    assert_eq!(asked["approver"], "admin");
    let id = asked["approval_id"].as_str().unwrap();

    // The member who asked may not decide it; another member does not even see it.
    let r = decide(
        &app,
        &alice.access,
        id,
        json!({"decision": "approve"}),
        false,
    )
    .await;
    expect_error(r, 403, "admin_approval").await;
    let r = decide(&app, &bob.access, id, json!({"decision": "approve"}), false).await;
    expect_error(r, 404, "not_found").await;
    assert!(pending(&app, &bob.access, "/api/approvals")
        .await
        .is_empty());
    let r = app
        .get_as(&alice.access, "/api/admin/approvals")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // The admin queue lists it with who asked and what will run.
    let queue = pending(&app, &admin.access, "/api/admin/approvals?state=pending").await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["username"], "alice");
    assert_eq!(
        queue[0]["arguments"],
        json!({"path": "b.txt", "content": "by the book"})
    );
    let by_user = pending(&app, &admin.access, "/api/admin/approvals?user=bob").await;
    assert!(by_user.is_empty());

    let r = decide(
        &app,
        &admin.access,
        id,
        json!({"decision": "approve", "note": "ok for this once"}),
        false,
    )
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["resumed"], true);
    assert_eq!(body["approval"]["state"], "approved");
    assert_eq!(body["approval"]["decided_by"], "boss");
    answered(&app, &alice.access, &conv, "done it").await;
    assert_eq!(
        file(&app, &alice.access, "b.txt").await.as_deref(),
        Some("by the book")
    );
    let rows = audit(&app, &admin.access, "decision=approved").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["approval_policy"], "admin");
    assert_eq!(rows[0]["approval_decided_by"], "boss");
    assert_eq!(rows[0]["approval_note"], "ok for this once");
    let r = decide(&app, &admin.access, id, json!({"decision": "deny"}), false).await;
    expect_error(r, 409, "already_decided").await;
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_is_told_who_denied_it_and_why() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    fake.push(write_call("c1", "c.txt", "nope"));
    fake.push(Reply::text("understood"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    let id = approval_id(&events);
    let r = decide(
        &app,
        &alice.access,
        &id,
        json!({"decision": "deny", "note": "wrong file"}),
        true,
    )
    .await;
    let resumed = parse_sse(&r.text().await.unwrap());
    let result = &named(&resumed, "tool_result")[0].data;
    assert_eq!(result["success"], false);
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("alice denied") && error.contains("wrong file"),
        "{error}"
    );
    assert_eq!(finish(&resumed), "stop");
    assert_eq!(file(&app, &alice.access, "c.txt").await, None);
    let told = tool_results(&fake, 1);
    assert!(told[0]["content"].as_str().unwrap().contains("wrong file"));

    let rows = audit(&app, &admin.access, "decision=denied").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["outcome"], "refused");
    assert_eq!(rows[0]["approval_note"], "wrong file");
    assert!(audit(&app, &admin.access, "decision=approved")
        .await
        .is_empty());
    let r = app
        .get_as(&admin.access, "/api/admin/audit?decision=maybe")
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_decision").await;
    // Bad decisions are refused before anything happens.
    let r = decide(
        &app,
        &alice.access,
        &id,
        json!({"decision": "later"}),
        false,
    )
    .await;
    expect_error(r, 400, "invalid_decision").await;
}

#[tokio::test]
async fn an_expired_call_does_not_run_and_the_turn_goes_on_by_itself() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = with_ttl(&fake, Duration::from_secs(1))
        .role(
            "member",
            json!({"tools": ["write_file"], "approvals": {"write_file": "user"}}),
        )
        .start_as(["boss", "alice"])
        .await;
    fake.push(write_call("c1", "d.txt", "late"));
    fake.push(Reply::text("too late then"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    let id = approval_id(&events);
    answered(&app, &alice.access, &conv, "too late then").await;
    assert_eq!(file(&app, &alice.access, "d.txt").await, None);
    let told = tool_results(&fake, 1);
    assert!(told[0]["content"]
        .as_str()
        .unwrap()
        .contains("approval_expired"));
    let r = decide(
        &app,
        &alice.access,
        &id,
        json!({"decision": "approve"}),
        false,
    )
    .await;
    expect_error(r, 409, "already_decided").await;
    let rows = audit(&app, &admin.access, "decision=expired").await;
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["approval_decided_by"].is_null());
}

#[tokio::test]
async fn parallel_calls_run_at_once_unless_they_wait_and_all_results_reach_the_model() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    fake.push(Reply::ToolCalls {
        calls: vec![
            (
                "c1".into(),
                "calculator".into(),
                json!({"expression": "6*7"}).to_string(),
            ),
            (
                "c2".into(),
                "write_file".into(),
                json!({"path": "e.txt", "content": "one"}).to_string(),
            ),
            (
                "c3".into(),
                "write_file".into(),
                json!({"path": "f.txt", "content": "two"}).to_string(),
            ),
        ],
        usage: None,
    });
    fake.push(Reply::text("all done"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "go").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let ran = named(&events, "tool_result");
    assert_eq!(ran.len(), 1, "only the calculator ran: {events:?}");
    assert_eq!(ran[0].data["id"], "c1");
    let asked = named(&events, "approval_required");
    assert_eq!(asked.len(), 2);
    // The calculator's result is stored with the step.
    let c = app.conversation(&alice.access, &conv).await;
    assert_eq!(c["messages"].as_array().unwrap().len(), 3, "{c}");

    let first = asked[0].data["approval_id"].as_str().unwrap();
    let second = asked[1].data["approval_id"].as_str().unwrap();
    let r = decide(
        &app,
        &alice.access,
        first,
        json!({"decision": "approve"}),
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["resumed"], false, "one call still waits");
    assert_eq!(fake.request_count(), 1);
    let r = decide(
        &app,
        &alice.access,
        second,
        json!({"decision": "deny"}),
        true,
    )
    .await;
    let resumed = parse_sse(&r.text().await.unwrap());
    let results = named(&resumed, "tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(finish(&resumed), "stop");
    let told: Vec<Value> = tool_results(&fake, 1)
        .iter()
        .map(|m| m["tool_call_id"].clone())
        .collect();
    assert_eq!(told, [json!("c1"), json!("c2"), json!("c3")]);
    assert_eq!(
        file(&app, &alice.access, "e.txt").await.as_deref(),
        Some("one")
    );
    assert_eq!(file(&app, &alice.access, "f.txt").await, None);
}

#[tokio::test]
async fn the_allowlist_is_checked_again_when_an_approved_call_runs() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    fake.push(write_call("c1", "g.txt", "revoked"));
    fake.push(Reply::text("ok"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "write").await;
    let id = approval_id(&events);
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["calculator"]}))
        .await;
    assert_eq!(r.status(), 200);
    let resumed = approve_and_follow(&app, &alice.access, &id).await;
    let result = &named(&resumed, "tool_result")[0].data;
    assert_eq!(result["success"], false);
    assert!(result["error"].as_str().unwrap().contains("not_permitted"));
    assert_eq!(file(&app, &alice.access, "g.txt").await, None);
}

#[tokio::test]
async fn roles_carry_approval_maps_and_refuse_bad_ones() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, _alice]) = approving(&fake, "admin").start_as(["boss", "alice"]).await;
    let roles: Value = app
        .get_as(&admin.access, "/api/admin/roles")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let member = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "member")
        .unwrap();
    assert_eq!(member["approvals"], json!({"write_file": "admin"}));
    // Left out: kept (a client that does not know approvals cannot drop them by accident).
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["write_file"]}))
        .await;
    let kept: Value = r.json().await.unwrap();
    assert_eq!(kept["approvals"], json!({"write_file": "admin"}));
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "approvals": {"write_file": "maybe"}}),
        )
        .await;
    expect_error(r, 400, "invalid_approvals").await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "approvals": {"no_such_tool": "user"}}),
        )
        .await;
    expect_error(r, 422, "unknown_tool").await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "approvals": {}}),
        )
        .await;
    let cleared: Value = r.json().await.unwrap();
    assert_eq!(cleared["approvals"], json!({}));
}

#[tokio::test]
async fn pause_on_one_process_and_decide_on_another() {
    let fake = FakeUpstream::start().await;
    let (first, [_admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    // The second process has the same model and workspace.
    let second = with_ttl(&fake, Duration::from_secs(3600))
        .database(&first.database_url)
        .settings(|s| s.tools.workspace_dir = first.workspace_dir.clone())
        .start()
        .await;
    fake.push(write_call("c1", "h.txt", "from afar"));
    fake.push(Reply::text("done elsewhere"));
    let conv = first.new_conversation(&alice.access).await;
    let events = first.chat(&alice.access, &conv, "write").await;
    let id = approval_id(&events);
    let resumed = approve_and_follow(&second, &alice.access, &id).await;
    assert_eq!(finish(&resumed), "stop");
    assert_eq!(streamed_text(&resumed), "done elsewhere");
    assert_eq!(
        file(&first, &alice.access, "h.txt").await.as_deref(),
        Some("from afar")
    );
}

#[tokio::test]
async fn a_paused_turn_survives_a_restart_and_a_new_process_runs_it_on() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = approving(&fake, "user").start_as(["boss", "alice"]).await;
    app.put_role(
        &admin.access,
        "member",
        json!({"tools": ["calculator"], "approvals": {"calculator": "user"}}),
    )
    .await;
    let mut via = TestApp::builder().database(&app.database_url).start().await;
    let env = [("AGENTCHAT_APPROVAL_TTL_SECS", "3600")];
    let paused_on = start_child_with(&app.database_url, &fake.base_url_openai(), &env);
    via.address = paused_on.address.clone();
    fake.push(Reply::tool_call(
        "c1",
        "calculator",
        json!({"expression": "20+22"}).to_string(),
    ));
    fake.push(Reply::text("it is 42"));
    let conv = via.new_conversation(&alice.access).await;
    let events = via.chat(&alice.access, &conv, "add").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let id = approval_id(&events);
    // The process that paused it is gone (killed, not stopped).
    drop(paused_on);
    let restarted = start_child_with(&app.database_url, &fake.base_url_openai(), &env);
    via.address = restarted.address.clone();
    let resumed = approve_and_follow(&via, &alice.access, &id).await;
    assert_eq!(finish(&resumed), "stop", "{resumed:?}");
    let result = &named(&resumed, "tool_result")[0].data;
    assert_eq!(result["data"]["result"], 42, "{result}");
    assert_eq!(streamed_text(&resumed), "it is 42");
}

#[tokio::test]
async fn waiting_approvals_are_gauged_with_the_age_of_the_oldest() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, alice]) = with_ttl(&fake, Duration::from_secs(8))
        .role(
            "member",
            json!({"tools": ["write_file"], "approvals": {"write_file": "admin"}}),
        )
        .start_as(["boss", "alice"])
        .await;
    fake.push(write_call("c1", "i.txt", "x"));
    let conv = app.new_conversation(&alice.access).await;
    app.chat(&alice.access, &conv, "write").await;
    let mut seen = 0.0;
    for _ in 0..40 {
        let text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        seen = sample(&text, "agentchat_approvals_waiting{approver=\"admin\"}");
        if seen == 1.0 {
            assert!(text.contains("agentchat_approval_oldest_waiting_seconds{approver=\"admin\"}"));
            assert!(text.contains("agentchat_approvals_requested_total{approver=\"admin\"} 1"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(seen, 1.0);
}

fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .map(|v| v.trim().parse().unwrap_or(-1.0))
        })
        .unwrap_or(0.0)
}

#[tokio::test]
async fn mcp_tools_not_annotated_read_only_wait_for_the_user_unless_the_role_says_none() {
    use agentchat_tests::mcp_peers::Peers;
    let Some(peers) = Peers::get() else { return };
    let (_everything, url) = peers.everything().await;
    let fake = FakeUpstream::start().await;
    let (app, [admin, alice]) = TestApp::builder()
        .openai(&fake)
        .mcp_peer(peers.own_stdio("own", &[]))
        .mcp_registered(json!({"name": "everything", "url": url, "timeout_ms": 10000}))
        .start_as(["boss", "alice"])
        .await;
    app.wait_mcp(&admin.access, "own", "connected", Some("own__echo"))
        .await;
    app.wait_mcp(
        &admin.access,
        "everything",
        "connected",
        Some("everything__echo"),
    )
    .await;
    let tools: Value = app
        .get_as(&admin.access, "/api/admin/tools")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let default_of = |name: &str| {
        tools["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["default_approval"].clone())
    };
    assert_eq!(default_of("own__echo"), Some(json!("user")));
    assert_eq!(default_of("everything__echo"), Some(json!("none")));
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["own__*", "everything__*"]}),
        )
        .await;
    assert_eq!(r.status(), 200);

    // Not annotated read-only: the person chatting confirms; annotated: it just runs.
    fake.push(Reply::ToolCalls {
        calls: vec![
            (
                "c1".into(),
                "own__echo".into(),
                json!({"text": "needs a yes"}).to_string(),
            ),
            (
                "c2".into(),
                "everything__echo".into(),
                json!({"message": "hi"}).to_string(),
            ),
        ],
        usage: None,
    });
    fake.push(Reply::text("fine"));
    let conv = app.new_conversation(&alice.access).await;
    let events = app.chat(&alice.access, &conv, "time?").await;
    assert_eq!(finish(&events), "awaiting_approval");
    let asked = named(&events, "approval_required");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].data["name"], "own__echo");
    assert_eq!(asked[0].data["server"], "own");
    let ran = named(&events, "tool_result");
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].data["id"], "c2");
    let id = asked[0].data["approval_id"].as_str().unwrap();
    let resumed = approve_and_follow(&app, &alice.access, id).await;
    assert_eq!(
        named(&resumed, "tool_result")[0].data["success"],
        true,
        "{resumed:?}"
    );

    // An explicit `none` overrides the default (here for the whole server).
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["own__*"], "approvals": {"own__*": "none"}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    fake.push(Reply::tool_call(
        "c3",
        "own__echo",
        json!({"text": "no need"}).to_string(),
    ));
    fake.push(Reply::text("now"));
    let events = app.chat(&alice.access, &conv, "and now?").await;
    assert_eq!(finish(&events), "stop");
    assert!(named(&events, "approval_required").is_empty());
}
