//! The code interpreter through the running server (issue 47, DESIGN §15), with the real
//! jail: the nginx-log job end to end, governance (grant, approval, kill switch, busy, money),
//! the audit row, outputs in the workspace under its quota.

use std::path::PathBuf;
use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub(crate) const NGINX_CSV: &str = "time,path,error_code\n\
    10:00,/a,504\n10:01,/b,500\n10:02,/a,504\n10:03,/c,404\n10:04,/a,504\n10:05,/b,500\n";

pub(crate) const GROUP_BY: &str = r#"import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("/mnt/data/logs/nginx.csv")
counts = df["error_code"].value_counts()
counts.rename_axis("error_code").reset_index(name="count").to_csv("/mnt/data/outputs/report.csv", index=False)
counts.plot.bar()
plt.savefig("/mnt/data/outputs/chart.png")
plt.close()
print(f"{len(counts)} error codes, {counts.index[0]} the most frequent")
"#;

/// A server on the fake model whose `member` role may run Python, with its workspaces in a
/// directory the test knows.
pub(crate) fn granted(fake: &FakeUpstream, ws: PathBuf) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .settings(move |s| s.tools.workspace_dir = ws)
        .role("member", json!({"tools": ["run_python", "read_file"]}))
}

fn workspace_dir() -> PathBuf {
    std::env::temp_dir().join(format!("agentchat-ci-ws-{}", uuid::Uuid::new_v4().simple()))
}

/// One turn in which the model runs `args` with run_python and then answers; the tool
/// result event and the conversation.
pub(crate) async fn run(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    args: Value,
) -> (Value, String) {
    fake.push(Reply::tool_call("t1", "run_python", args.to_string()));
    fake.push(Reply::text("done"));
    let conv = app.new_conversation(token).await;
    let events = app.chat(token, &conv, "run it").await;
    let result = events
        .iter()
        .find(|e| e.event == "tool_result")
        .unwrap_or_else(|| panic!("a tool result: {events:?}"))
        .data
        .clone();
    (result, conv)
}

#[derive(diesel::QueryableByName, Debug)]
pub(crate) struct RunRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub code: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub code_sha256: String,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    pub inputs: Value,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    pub outputs: Value,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub outcome: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Integer>)]
    pub exit_code: Option<i32>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub limit_hit: Option<String>,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub cpu_ms: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub max_rss_bytes: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub duration_ms: i64,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Numeric>)]
    pub cost: Option<Decimal>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub error: Option<String>,
}

pub(crate) async fn runs(app: &TestApp) -> Vec<RunRow> {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT code, code_sha256, inputs, outputs, outcome, exit_code, limit_hit, cpu_ms, \
                max_rss_bytes, duration_ms, cost, error FROM sandbox_runs ORDER BY id",
    )
    .load(&mut db)
    .await
    .unwrap()
}

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

pub(crate) async fn metrics(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_nginx_job_writes_a_report_and_a_chart_into_the_workspace_and_is_audited() {
    let fake = FakeUpstream::start().await;
    let ws = workspace_dir();
    let (app, [_admin, member]) = granted(&fake, ws).start_as(["boss", "ana"]).await;
    app.upload(&member.access, "logs/nginx.csv", NGINX_CSV)
        .await;
    let (result, conv) = run(
        &app,
        &fake,
        &member.access,
        json!({"code": GROUP_BY, "inputs": ["logs/nginx.csv"]}),
    )
    .await;
    assert_eq!(result["success"], true, "{result}");
    let data = &result["data"];
    assert_eq!(data["exit"], 0, "{data}");
    assert_eq!(data["timed_out"], false);
    assert_eq!(data["stdout"], "3 error codes, 504 the most frequent\n");
    assert!(data["cpu_ms"].as_u64().unwrap() > 0, "{data}");
    assert!(data["max_rss_bytes"].as_u64().unwrap() > 1 << 20, "{data}");
    let files = data["files"].as_array().unwrap();
    let report = files
        .iter()
        .find(|f| f["path"] == format!("outputs/{conv}/report.csv"));
    let report = report.unwrap_or_else(|| panic!("{files:?}"));
    assert_eq!(report["mime"], "text/csv");
    assert_eq!(report["preview"], "error_code,count\n504,3\n500,2\n404,1");
    let chart = files
        .iter()
        .find(|f| f["path"] == format!("outputs/{conv}/chart.png"))
        .unwrap_or_else(|| panic!("{files:?}"));
    assert_eq!(chart["mime"], "image/png");

    // Served by the file route as a download, never rendered on our origin.
    let r = app
        .get_as(
            &member.access,
            &format!("/api/files/outputs/{conv}/chart.png"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment"));
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));
    let png = r.bytes().await.unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(chart["bytes"], png.len());

    // The audit row keeps the whole code, its hash, and the files with theirs.
    let rows = runs(&app).await;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.code, GROUP_BY);
    assert_eq!(row.code_sha256, sha(GROUP_BY.as_bytes()));
    assert_eq!(row.outcome, "ok");
    assert_eq!(row.exit_code, Some(0));
    assert_eq!(
        row.inputs,
        json!([{"path": "logs/nginx.csv", "bytes": NGINX_CSV.len(), "sha256": sha(NGINX_CSV.as_bytes())}])
    );
    let outs = row.outputs.as_array().unwrap();
    assert_eq!(outs.len(), 2, "{outs:?}");
    let chart_row = outs
        .iter()
        .find(|o| o["path"] == format!("outputs/{conv}/chart.png"))
        .unwrap();
    assert_eq!(chart_row["sha256"], sha(&png));
    assert_eq!(row.cpu_ms, data["cpu_ms"].as_i64().unwrap());
    assert!(row.duration_ms > 0 && row.max_rss_bytes > 0);
    assert_eq!(row.cost, None, "free by default");

    let m = metrics(&app).await;
    assert!(
        m.contains("agentchat_sandbox_runs_total{outcome=\"ok\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("agentchat_sandbox_duration_seconds_count 1"),
        "{m}"
    );
    assert!(m.contains("agentchat_sandbox_max_rss_bytes_count 1"), "{m}");
}

#[tokio::test]
async fn off_by_default_and_a_kill_switch_refuses_with_the_reason() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = TestApp::builder()
        .openai(&fake)
        .start_as(["boss", "ana"])
        .await;
    let (result, _) = run(&app, &fake, &member.access, json!({"code": "print(1)"})).await;
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("not_permitted"),
        "{result}"
    );
    let offered = &fake.requests()[0]["body"]["tools"];
    assert!(
        !offered.to_string().contains("run_python"),
        "not offered: {offered}"
    );
    assert!(runs(&app).await.is_empty(), "nothing ran");

    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = granted(&fake, workspace_dir())
        .settings(|s| s.sandbox.enabled = false)
        .start_as(["boss", "ana"])
        .await;
    let (result, _) = run(&app, &fake, &member.access, json!({"code": "print(1)"})).await;
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("switched off"),
        "{result}"
    );
    let rows = runs(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, "denied");
    assert!(rows[0].error.as_deref().unwrap().contains("switched off"));
    assert!(metrics(&app)
        .await
        .contains("agentchat_sandbox_runs_total{outcome=\"denied\"} 1"));
}

#[tokio::test]
async fn an_admin_may_require_approval_and_nothing_runs_before_it() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = TestApp::builder()
        .openai(&fake)
        .role(
            "member",
            json!({"tools": ["run_python"], "approvals": {"run_python": "admin"}}),
        )
        .start_as(["boss", "ana"])
        .await;
    fake.push(Reply::tool_call(
        "t1",
        "run_python",
        json!({"code": "print(1)"}).to_string(),
    ));
    let conv = app.new_conversation(&member.access).await;
    let events = app.chat(&member.access, &conv, "run it").await;
    assert!(
        events.iter().any(|e| e.event == "approval_required"),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e.event == "tool_result"));
    assert!(runs(&app).await.is_empty());
}

#[tokio::test]
async fn cpu_is_charged_to_the_money_budget_exactly_and_a_short_budget_refuses() {
    let fake = FakeUpstream::start().await;
    let providers = json!([{"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(),
                            "api_key": "sk-oa", "max_retries": 0}]);
    let models = json!([{"name": "metered", "provider": "oa", "upstream_model": "gpt-metered",
                         "max_output": 100, "prices": [{"currency": "USD", "input": "1", "output": "10"}]}]);
    let (app, [admin, member]) = granted(&fake, workspace_dir())
        // 3.6 per CPU-hour: one CPU-millisecond costs 0.000001.
        .settings(move |s| {
            s.providers = serde_json::from_value(providers).unwrap();
            s.models = serde_json::from_value(models).unwrap();
            s.sandbox.price_per_cpu_hour = "3.6".parse().unwrap();
            s.sandbox.timeout_secs = 20;
        })
        .model("metered")
        .start_as(["boss", "ana"])
        .await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["run_python"], "budget_amount": "1", "budget_currency": "USD"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint('ok')";
    let (result, _) = run(&app, &fake, &member.access, json!({"code": burn})).await;
    assert_eq!(result["data"]["exit"], 0, "{result}");
    let rows = runs(&app).await;
    let cost = Decimal::from(rows[0].cpu_ms) * Decimal::new(1, 6);
    assert!(rows[0].cpu_ms >= 300, "{}", rows[0].cpu_ms);
    assert_eq!(rows[0].cost, Some(cost));
    let (spent, reserved, holds, models) = money(&app, member.user_id).await;
    assert_eq!(
        spent - models,
        cost,
        "charged exactly cpu_ms × price / 3,600,000"
    );
    assert_eq!(
        (reserved, holds),
        (Decimal::ZERO, 0),
        "the hold is released"
    );

    // Less left than the timeout's CPU costs (20 s = 0.02): refused before anything runs.
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["run_python"], "budget_amount": "0.01", "budget_currency": "USD"}),
        )
        .await;
    assert!(r.status().is_success());
    let (result, _) = run(&app, &fake, &member.access, json!({"code": "print(2)"})).await;
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("money budget"),
        "{result}"
    );
    assert_eq!(runs(&app).await.last().unwrap().outcome, "denied");
    let (after, reserved, _, models_after) = money(&app, member.user_id).await;
    assert_eq!(after - models_after, cost, "no more CPU charged");
    assert_eq!(reserved, Decimal::ZERO);
}

/// Spent, reserved, holds, and what model calls cost (the usage ledger).
async fn money(app: &TestApp, user: uuid::Uuid) -> (Decimal, Decimal, i64, Decimal) {
    #[derive(diesel::QueryableByName)]
    struct M {
        #[diesel(sql_type = diesel::sql_types::Numeric)]
        spent: Decimal,
        #[diesel(sql_type = diesel::sql_types::Numeric)]
        reserved: Decimal,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        holds: i64,
        #[diesel(sql_type = diesel::sql_types::Numeric)]
        ledger: Decimal,
    }
    let mut db = app.db().await;
    let m: M = diesel::sql_query(
        "SELECT COALESCE((SELECT sum(spent) FROM money_periods WHERE user_id = $1), 0) AS spent, \
                COALESCE((SELECT sum(reserved) FROM money_periods WHERE user_id = $1), 0) AS reserved, \
                (SELECT count(*) FROM money_holds WHERE user_id = $1)::BIGINT AS holds, \
                COALESCE((SELECT sum(cost) FROM usage_records WHERE user_id = $1), 0) AS ledger",
    )
    .bind::<diesel::sql_types::Uuid, _>(user)
    .get_result(&mut db)
    .await
    .unwrap();
    (m.spent, m.reserved, m.holds, m.ledger)
}

#[tokio::test]
async fn a_second_run_of_the_same_user_waits_then_is_told_busy() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = granted(&fake, workspace_dir())
        .start_as(["boss", "ana"])
        .await;
    let slow = json!({"code": "import time; time.sleep(13); print('slept')"}).to_string();
    let quick = json!({"code": "print('quick')"}).to_string();
    fake.push(Reply::ToolCalls {
        calls: vec![
            ("a".into(), "run_python".into(), slow),
            ("b".into(), "run_python".into(), quick),
        ],
        usage: None,
    });
    fake.push(Reply::text("done"));
    let conv = app.new_conversation(&member.access).await;
    let events = app.chat(&member.access, &conv, "two at once").await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "tool_result")
        .map(|e| &e.data)
        .collect();
    assert_eq!(results.len(), 2, "{events:?}");
    let busy = results
        .iter()
        .filter(|r| r["success"] == false)
        .collect::<Vec<_>>();
    assert_eq!(busy.len(), 1, "{results:?}");
    assert!(
        busy[0]["error"].as_str().unwrap().starts_with("busy:"),
        "{busy:?}"
    );
    let m = metrics(&app).await;
    assert!(
        m.contains("agentchat_sandbox_runs_total{outcome=\"busy\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("agentchat_sandbox_queue_wait_seconds_count 1"),
        "{m}"
    );
}

#[tokio::test]
async fn outputs_count_against_the_workspace_quota() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = granted(&fake, workspace_dir())
        .settings(|s| s.tools.quota.max_file_bytes = 1000)
        .start_as(["boss", "ana"])
        .await;
    let code = "open('/mnt/data/outputs/small.txt','w').write('x'*10)\n\
                open('/mnt/data/outputs/big.txt','w').write('x'*5000)";
    let (result, conv) = run(&app, &fake, &member.access, json!({"code": code})).await;
    let data = &result["data"];
    assert_eq!(data["exit"], 0, "{result}");
    let files = data["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0]["path"], format!("outputs/{conv}/small.txt"));
    let not_saved = data["not_saved"].to_string();
    assert!(
        not_saved.contains("big.txt") && not_saved.contains("per-file limit"),
        "{not_saved}"
    );
    let r = app
        .get_as(
            &member.access,
            &format!("/api/files/outputs/{conv}/big.txt"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let _ = Duration::ZERO;
}
