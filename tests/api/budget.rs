//! Token budgets through the running server: refusal up front, no overshoot under
//! concurrency (one process and two), nothing leaked or charged twice on failures, local
//! counting, period rollover.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use chrono::TimeZone;
use serde_json::{json, Value};

const MAX_OUTPUT: u32 = 100;

/// A server on the fake model with room for many concurrent turns (a pool of 16 and a
/// long acquire timeout) and a small output cap, so that each call's reservation is known.
fn budgeted(fake: &FakeUpstream) -> AppBuilder<'_> {
    TestApp::builder().openai(fake).settings(|s| {
        s.llm.max_output_tokens = MAX_OUTPUT;
        s.database.pool_size = 16;
        s.database.acquire_timeout = Duration::from_secs(20);
    })
}

fn usage(i: u64, o: u64) -> Option<Usage> {
    Some(Usage::new(i, o))
}

/// Sends one turn; returns the status and, for 200, the finish reason.
async fn turn(app_url: &str, client: &reqwest::Client, token: &str, conv: &str) -> (u16, Value) {
    let r = client
        .post(format!("{app_url}/api/conversations/{conv}/messages"))
        .bearer_auth(token)
        .json(&json!({"content": "hi"}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    if status == 200 {
        let events = parse_sse(&body);
        (
            status,
            events.last().map(|e| e.data.clone()).unwrap_or(Value::Null),
        )
    } else {
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

/// Fires `n` turns at once from one user, spread over the given servers, and checks the
/// invariants. Returns how many were admitted.
async fn storm(
    apps: &[&TestApp],
    fake: &FakeUpstream,
    admin: &str,
    user: &str,
    limit: i64,
    n: usize,
) -> usize {
    let home = apps[0];
    let s = home.signed_up(user).await;
    home.set_budget(admin, s.user_id, Some(limit)).await;
    let mut convs = Vec::new();
    for _ in 0..n {
        convs.push(home.new_conversation(&s.access).await);
    }
    let calls_before = fake.request_count();
    let mut handles = Vec::new();
    for (i, conv) in convs.into_iter().enumerate() {
        let url = apps[i % apps.len()].address.clone();
        let client = home.client.clone();
        let token = s.access.clone();
        handles.push(tokio::spawn(async move {
            turn(&url, &client, &token, &conv).await
        }));
    }
    let mut admitted = 0;
    for h in handles {
        let (status, last) = h.await.unwrap();
        match status {
            200 => {
                admitted += 1;
                assert_eq!(last["finish_reason"], "stop", "{last}");
            }
            429 => {
                let code = last["error"]["code"].as_str().unwrap().to_owned();
                assert!(
                    code == "budget_exhausted" || code == "budget_in_use",
                    "{last}"
                );
            }
            other => panic!("unexpected status {other}: {last}"),
        }
    }
    let t = home.budget_totals(s.user_id).await;
    assert_eq!(
        fake.request_count() - calls_before,
        admitted,
        "upstream calls = admissions"
    );
    assert!(t.spent <= limit, "spent {} > limit {limit}", t.spent);
    assert_eq!(
        t.spent,
        60 * admitted as i64,
        "each admitted call is charged its usage once"
    );
    assert_eq!(t.spent, t.ledger);
    assert_eq!((t.reserved, t.holds), (0, 0), "reservations leaked");
    assert!(admitted >= 1);
    admitted
}

#[tokio::test]
async fn two_hundred_concurrent_turns_never_overshoot() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "ok".into(),
            usage: usage(40, 20),
        }
        .delay_first_byte(Duration::from_millis(300)),
    ));
    let (app, [admin]) = budgeted(&fake).start_as(["boss"]).await;
    for round in 0..3 {
        let admitted = storm(
            &[&app],
            &fake,
            &admin.access,
            &format!("crowd{round}"),
            2000,
            200,
        )
        .await;
        assert!(
            admitted < 200,
            "round {round}: the budget admitted everyone"
        );
    }
}

/// A second server process (this test binary re-run as `child_server_process`).
pub(crate) struct ChildServer {
    pub(crate) child: Child,
    pub(crate) address: String,
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_child(database_url: &str, llm_base: &str) -> ChildServer {
    start_child_with(database_url, llm_base, &[])
}

/// [`start_child`] with more environment variables.
pub(crate) fn start_child_with(
    database_url: &str,
    llm_base: &str,
    env: &[(&str, &str)],
) -> ChildServer {
    use std::io::BufRead;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_server_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGENTCHAT_CHILD_DATABASE_URL", database_url)
        .env("AGENTCHAT_LLM_PROVIDER", "openai")
        .env("AGENTCHAT_LLM_BASE_URL", llm_base)
        .env("AGENTCHAT_LLM_MAX_OUTPUT_TOKENS", MAX_OUTPUT.to_string())
        .env("AGENTCHAT_LLM_MAX_RETRIES", "0")
        .env("AGENTCHAT_DATABASE_POOL_SIZE", "16")
        .env("AGENTCHAT_DATABASE_ACQUIRE_TIMEOUT_MS", "20000")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("child exited before listening")
            .unwrap();
        // The harness prefixes the line with the test name.
        if let Some(p) = line.split("CHILD_PORT=").nth(1) {
            break p.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    ChildServer {
        child,
        address: format!("http://127.0.0.1:{port}"),
    }
}

#[tokio::test]
async fn two_server_processes_share_one_budget_without_overshoot() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "ok".into(),
            usage: usage(40, 20),
        }
        .delay_first_byte(Duration::from_millis(300)),
    ));
    let app = budgeted(&fake).start().await;
    let child = start_child(&app.database_url, &fake.base_url_openai());
    let mut second = TestApp::builder().database(&app.database_url).start().await;
    second.address = child.address.clone();
    let admin = app.signed_up("boss").await;
    for round in 0..2 {
        storm(
            &[&app, &second],
            &fake,
            &admin.access,
            &format!("pair{round}"),
            2000,
            200,
        )
        .await;
    }
}

#[tokio::test]
async fn an_exhausted_budget_is_refused_before_any_upstream_call() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = budgeted(&fake)
        .budget("broke", Some(50))
        .start_as(["boss", "broke"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    let r = app.send_message(&member.access, &conv, "hello").await;
    assert!(r.headers().contains_key("retry-after"));
    let body = expect_error(r, 429, "budget_exhausted").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("resets at"),
        "{body}"
    );
    assert_eq!(fake.request_count(), 0);
    assert_eq!(
        app.conversation(&member.access, &conv).await["messages"],
        json!([])
    );
    let me: Value = app
        .get_as(&member.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["budget"]["limit"], 50);
    assert_eq!(me["budget"]["used"], 0);
}

/// The start locks the budget period before it knows the call's size and holds the fitted
/// amount at its commit; when less is left than the call needs, it reserves exactly, and
/// the refusal tells what is really left. Nothing stays reserved, and the next turn (budget
/// raised) runs.
#[tokio::test]
async fn a_budget_with_too_little_left_for_the_call_is_refused_with_what_is_left() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = budgeted(&fake)
        .budget("nearly", Some(100_000))
        .start_as(["boss", "nearly"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    fake.push(Reply::Text {
        text: "first".into(),
        usage: usage(10, 5),
    });
    let r = app.send_message(&member.access, &conv, "hello").await;
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    // 100 left: more than the least worth holding (64), less than this call needs.
    app.set_budget(&admin.access, member.user_id, Some(115))
        .await;
    let r = app.send_message(&member.access, &conv, "again").await;
    let body = expect_error(r, 429, "budget_exhausted").await;
    assert_eq!(body["error"]["details"]["remaining"], 100, "{body}");
    assert!(body["error"]["details"]["needed"].as_i64().unwrap() > 100);
    let me = |app: &TestApp| {
        let token = member.access.clone();
        let app_get = app.get_as(&token, "/api/me");
        async move { app_get.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let budget = me(&app).await["budget"].clone();
    assert_eq!(
        (budget["used"].clone(), budget["reserved"].clone()),
        (json!(15), json!(0))
    );
    assert_eq!(fake.request_count(), 1);

    app.set_budget(&admin.access, member.user_id, Some(100_000))
        .await;
    fake.push(Reply::Text {
        text: "second".into(),
        usage: usage(20, 5),
    });
    let r = app.send_message(&member.access, &conv, "once more").await;
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let budget = me(&app).await["budget"].clone();
    assert_eq!(
        (budget["used"].clone(), budget["reserved"].clone()),
        (json!(40), json!(0))
    );
}

#[tokio::test]
async fn failures_midway_leak_nothing_and_charge_once() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, s]) = budgeted(&fake)
        .settings(|s| {
            s.llm.idle_timeout = Duration::from_millis(300);
            s.sse_keep_alive = Duration::from_millis(100);
        })
        .budget("unlucky", Some(100_000))
        .start_as(["boss", "unlucky"])
        .await;

    // Upstream error before anything streamed: nothing charged.
    fake.push(Reply::error(500, "boom"));
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "one").await;
    assert_eq!(events.last().unwrap().event, "error");
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.spent, t.reserved, t.holds), (0, 0, 0));

    // Idle timeout mid-stream.
    fake.push(Reply::text("never finishes").hang());
    let events = app.chat(&s.access, &conv, "two").await;
    assert_eq!(events.last().unwrap().data["code"], "upstream_timeout");
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
    assert_eq!(t.spent, t.ledger);

    // Client disconnect mid-stream: charged for what was generated, not zero, not the hold.
    let before = app.budget_totals(s.user_id).await.spent;
    fake.push(
        Reply::text("a long answer that keeps going")
            .chunk_delay(Duration::from_millis(50))
            .hang(),
    );
    let mut resp = app.send_message(&s.access, &conv, "three").await;
    let _ = resp.chunk().await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    drop(resp);
    let mut t = app.budget_totals(s.user_id).await;
    for _ in 0..100 {
        if t.holds == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        t = app.budget_totals(s.user_id).await;
    }
    assert_eq!((t.reserved, t.holds), (0, 0));
    let charged = t.spent - before;
    assert!(
        charged > 0,
        "a stopped turn is charged for its input and partial output"
    );
    assert!(charged < 100_000);
    assert_eq!(t.spent, t.ledger, "nothing charged twice");
}

#[tokio::test]
async fn without_upstream_usage_the_local_count_is_charged() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::text("an answer with no usage reported"));
    let (app, [admin, s]) = budgeted(&fake)
        .budget("counter", Some(100_000))
        .start_as(["boss", "counter"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    app.chat(&s.access, &conv, "count me").await;
    let t = app.budget_totals(s.user_id).await;
    let stored = app.conversation(&s.access, &conv).await;
    let m = &stored["messages"][1];
    let local = m["input_tokens"].as_i64().unwrap() + m["output_tokens"].as_i64().unwrap();
    assert!(m["output_tokens"].as_i64().unwrap() > 0);
    assert_eq!(t.spent, local);
    assert_eq!((t.reserved, t.holds), (0, 0));
    // The admin report agrees with what is stored with the message.
    let report: Value = app
        .get_as(&admin.access, "/api/admin/usage?period=month")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = report["by_user"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["username"] == "counter")
        .unwrap();
    assert_eq!(row["input_tokens"], m["input_tokens"]);
    assert_eq!(row["output_tokens"], m["output_tokens"]);
    assert!(report["tools"].is_array());
    assert!(report["grafana_url"].is_null());
    let me: Value = app
        .get_as(&s.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["budget"]["used"], local);
    assert_eq!(me["budget"]["reserved"], 0);
}

#[tokio::test]
async fn a_turn_that_runs_out_midway_ends_with_budget_exhausted() {
    let fake = FakeUpstream::start().await;
    // The provider reports far more than was reserved (yet within the context window, so
    // not cut as impossible): the budget is charged the hold only.
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "c1".into(),
            "calculator".into(),
            r#"{"expression":"1+1"}"#.into(),
        )],
        usage: usage(20_000, 100_000),
    });
    fake.push(Reply::text("never reached"));
    let (app, [_admin, s]) = budgeted(&fake)
        .role("member", json!({"tools": ["calculator", "current_time"]}))
        // Room for the first call (its input estimate, ~300 tokens with these two tools, plus
        // the output cap) but not for a second one, whose input also carries the first step.
        .budget("spender", Some(650))
        .start_as(["boss", "spender"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "go").await;
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "budget_exhausted"
    );
    assert_eq!(fake.request_count(), 1);
    let t = app.budget_totals(s.user_id).await;
    assert!(t.spent <= 650, "{t:?}");
    assert_eq!((t.reserved, t.holds), (0, 0));
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(
        stored["messages"].as_array().unwrap().len(),
        3,
        "user, assistant, tool kept"
    );
    assert_eq!(
        stored["messages"][1]["input_tokens"], 20_000,
        "true usage is recorded"
    );
}

#[tokio::test]
async fn periods_roll_over_at_utc_boundaries_and_keep_history() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "ok".into(),
            usage: usage(100, 100),
        }
        .scripted(),
    ));
    let clock = TestClock::at(
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 29, 23, 0, 0)
            .unwrap(),
    );
    let (app, [_admin, s]) = budgeted(&fake)
        .clock(clock.clock())
        .role(
            "member",
            json!({"tools": ["calculator"], "token_budget": 1000, "budget_period": "day"}),
        )
        .start_as(["boss", "daily"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let mut refused = false;
    for _ in 0..20 {
        let r = app.send_message(&s.access, &conv, "again").await;
        if r.status() == 429 {
            let b = expect_error(r, 429, "budget_exhausted").await;
            assert!(
                b["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("2026-11-30T00:00:00Z"),
                "{b}"
            );
            refused = true;
            break;
        }
        r.text().await.unwrap();
    }
    assert!(refused, "the daily budget never ran out");
    clock.advance(chrono::Duration::hours(2));
    let events = app.chat(&s.access, &conv, "new day").await;
    assert_eq!(events.last().unwrap().data["finish_reason"], "stop");
    let t = app.budget_totals(s.user_id).await;
    assert_eq!(t.rows, 2, "yesterday's period is kept as history");
    let me: Value = app
        .get_as(&s.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["budget"]["period"], "day");
    assert_eq!(me["budget"]["used"], 200);
    assert_eq!(me["budget"]["resets_at"], "2026-12-01T00:00:00Z");
}

#[tokio::test]
async fn the_sweeper_frees_holds_of_dead_processes() {
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let mut db = app.db().await;
    use diesel_async::RunQueryDsl;
    diesel::sql_query(
        "INSERT INTO budget_periods (user_id, period, period_start, reserved) VALUES ($1, 'month', '2026-11-01', 500); \
         ",
    )
    .bind::<diesel::sql_types::Uuid, _>(admin.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at) \
         VALUES (gen_random_uuid(), $1, 'month', '2026-11-01', 500, now() - interval '1 minute')",
    )
    .bind::<diesel::sql_types::Uuid, _>(admin.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    let freed = agentchat::db::models::budget::sweep(&mut db, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(freed, 500);
    let t = app.budget_totals(admin.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
}

/// A turn's hold names its conversation, and the sweeper reads that row by its key: a hold
/// whose turn no longer holds the conversation is freed, the running turn's is kept, and a
/// hold that names no conversation (an older build's) waits for its expiry.
#[tokio::test]
async fn the_sweeper_reads_a_turns_conversation_by_the_key_its_hold_names() {
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let ended = app.new_conversation(&admin.access).await;
    let running = app.new_conversation(&admin.access).await;
    let mut db = app.db().await;
    use diesel::sql_types::Uuid as SqlUuid;
    use diesel_async::RunQueryDsl;
    let running_turn = uuid::Uuid::new_v4();
    diesel::sql_query(
        "UPDATE conversations SET active_turn_id = $2, active_turn_at = now() WHERE id = $1",
    )
    .bind::<SqlUuid, _>(running.parse::<uuid::Uuid>().unwrap())
    .bind::<SqlUuid, _>(running_turn)
    .execute(&mut db)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO budget_periods (user_id, period, period_start, reserved) \
         VALUES ($1, 'month', '2026-11-01', 900)",
    )
    .bind::<SqlUuid, _>(admin.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    // (turn, conversation, amount): an ended turn's, the running one's, an older build's.
    let holds = [
        (
            Some(uuid::Uuid::new_v4()),
            Some(ended.parse::<uuid::Uuid>().unwrap()),
            300,
        ),
        (
            Some(running_turn),
            Some(running.parse::<uuid::Uuid>().unwrap()),
            200,
        ),
        (Some(uuid::Uuid::new_v4()), None, 400),
    ];
    for (turn, conversation, amount) in holds {
        diesel::sql_query(
            "INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at, \
                                       turn_id, conversation_id) \
             VALUES (gen_random_uuid(), $1, 'month', '2026-11-01', $2, now() + interval '1 hour', \
                     $3, $4)",
        )
        .bind::<SqlUuid, _>(admin.user_id)
        .bind::<diesel::sql_types::BigInt, _>(amount)
        .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(turn)
        .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(conversation)
        .execute(&mut db)
        .await
        .unwrap();
    }
    // The same three as money holds.
    diesel::sql_query(
        "WITH p AS (INSERT INTO money_periods (user_id, period, period_start, currency, reserved) \
                    VALUES ($1, 'month', '2026-11-01', 'USD', 9) RETURNING user_id) \
         INSERT INTO money_holds (id, user_id, period, period_start, currency, amount, \
                                  expires_at, turn_id, conversation_id) \
         SELECT gen_random_uuid(), p.user_id, 'month', '2026-11-01', 'USD', h.amount / 100, \
                now() + interval '1 hour', h.turn_id, h.conversation_id \
           FROM p, budget_holds h WHERE h.user_id = p.user_id",
    )
    .bind::<SqlUuid, _>(admin.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    let freed = agentchat::db::models::budget::sweep(&mut db, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(freed, 300);
    let t = app.budget_totals(admin.user_id).await;
    assert_eq!((t.reserved, t.holds), (600, 2));
    agentchat::db::models::budget_money::sweep(&mut db, chrono::Utc::now())
        .await
        .unwrap();
    #[derive(diesel::QueryableByName)]
    struct Money {
        #[diesel(sql_type = diesel::sql_types::Text)]
        reserved: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        holds: i64,
    }
    let money: Money = diesel::sql_query(
        "SELECT (SELECT reserved::TEXT FROM money_periods WHERE user_id = $1) AS reserved, \
                (SELECT count(*) FROM money_holds WHERE user_id = $1) AS holds",
    )
    .bind::<SqlUuid, _>(admin.user_id)
    .get_result(&mut db)
    .await
    .unwrap();
    assert_eq!((money.reserved.as_str(), money.holds), ("6.000000000", 2));
    // An hour on, the older build's hold has lapsed too; the running turn's has as well.
    let later = chrono::Utc::now() + chrono::Duration::hours(2);
    let freed = agentchat::db::models::budget::sweep(&mut db, later)
        .await
        .unwrap();
    assert_eq!(freed, 600);
}

#[tokio::test]
async fn without_upstream_usage_the_offered_tools_are_counted_too() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::text("short"));
    // The first account is an admin: every built-in tool is offered.
    let (app, [s]) = budgeted(&fake)
        .budget("toolful", Some(100_000))
        .start_as(["toolful"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    app.chat(&s.access, &conv, "hi").await;
    let sent = &fake.requests()[0]["body"];
    let tools_chars = sent["tools"].to_string().chars().count() as i64;
    assert!(tools_chars > 2000, "{sent}");
    let stored = app.conversation(&s.access, &conv).await;
    let input = stored["messages"][1]["input_tokens"].as_i64().unwrap();
    // About four characters a token: the schemas alone are far more than the message.
    assert!(
        input >= tools_chars / 8,
        "input {input} for {tools_chars} chars of tools"
    );
    let t = app.budget_totals(s.user_id).await;
    assert_eq!(t.spent, t.ledger);
    assert!(t.spent >= input);
}

#[tokio::test]
async fn the_first_concurrent_turns_of_a_new_period_are_not_refused() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::Text {
            text: "ok".into(),
            usage: usage(40, 20),
        }
        .delay_first_byte(Duration::from_millis(200)),
    ));
    let (app, [admin]) = budgeted(&fake).start_as(["boss"]).await;
    for round in 0..3 {
        // A fresh user has no period row yet: their first turns race to create it.
        let s = app.signed_up(&format!("fresh{round}")).await;
        app.set_budget(&admin.access, s.user_id, Some(1_000_000))
            .await;
        let mut convs = Vec::new();
        for _ in 0..30 {
            convs.push(app.new_conversation(&s.access).await);
        }
        let turns: Vec<_> = convs
            .into_iter()
            .map(|c| {
                let (url, client, token) =
                    (app.address.clone(), app.client.clone(), s.access.clone());
                tokio::spawn(async move { turn(&url, &client, &token, &c).await })
            })
            .collect();
        for t in turns {
            let (status, last) = t.await.unwrap();
            assert_eq!(status, 200, "round {round}: {last}");
        }
    }
}

/// A user without a token budget holds nothing, yet what each call used is added to the
/// period: by the step that stores the tool call and by the turn's end, each of which
/// settles within a larger statement of its own (`Rows::store_settling`, `finish`).
#[tokio::test]
async fn without_a_budget_every_calls_usage_is_still_counted() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "c1".into(),
            "calculator".into(),
            json!({"expression": "6*7"}).to_string(),
        )],
        usage: usage(30, 7),
    });
    fake.push(Reply::Text {
        text: "42".into(),
        usage: usage(50, 3),
    });
    let (app, [_admin, s]) = budgeted(&fake).start_as(["boss", "free"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "six times seven").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.spent, t.reserved, t.holds), (90, 0, 0));
    assert_eq!(t.ledger, 90);
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 4, "{stored}");
}
