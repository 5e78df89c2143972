//! A code run's outputs beyond the chat (issue 47): a link to the conversation serves the
//! files its tool results saved, through the link's own file route and only those (not the
//! rest of the sharer's workspace), and not at all when the link hides the tools' outputs;
//! the Markdown export links them.

use std::path::PathBuf;

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::code_interpreter::{granted, run, GROUP_BY, NGINX_CSV};

async fn share(app: &TestApp, token: &str, conv: &str, redact_tools: bool) -> String {
    let r = app
        .post_as(token, &format!("/api/conversations/{conv}/shares"))
        .json(&json!({"scope": "org", "redact_tools": redact_tools}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let made: Value = r.json().await.unwrap();
    made["id"].as_str().unwrap().to_owned()
}

async fn through_link(app: &TestApp, token: &str, id: &str, path: &str) -> reqwest::Response {
    app.get_as(token, &format!("/api/shares/{id}/files/{path}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_link_serves_the_runs_outputs_only_and_hides_them_with_the_tools_outputs() {
    let fake = FakeUpstream::start().await;
    let ws: PathBuf =
        std::env::temp_dir().join(format!("agentchat-ci-ws-{}", uuid::Uuid::new_v4().simple()));
    let (app, [_admin, ana, bob]) = granted(&fake, ws).start_as(["boss", "ana", "bob"]).await;
    app.upload(&ana.access, "logs/nginx.csv", NGINX_CSV).await;
    let (result, conv) = run(
        &app,
        &fake,
        &ana.access,
        json!({"code": GROUP_BY, "inputs": ["logs/nginx.csv"]}),
    )
    .await;
    assert_eq!(result["data"]["exit"], 0, "{result}");
    let paths: Vec<String> = result["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    let chart = paths.iter().find(|p| p.ends_with("/chart.png")).unwrap();
    let report = paths.iter().find(|p| p.ends_with("/report.csv")).unwrap();

    // The link serves both outputs, the very bytes of the sharer's workspace.
    let open = share(&app, &ana.access, &conv, false).await;
    let r = through_link(&app, &bob.access, &open, chart).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("chart.png"));
    let served = r.bytes().await.unwrap();
    assert!(served.starts_with(b"\x89PNG"), "a PNG");
    let own = app
        .get_as(&ana.access, &format!("/api/files/{chart}"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(served, own);
    let r = through_link(&app, &bob.access, &open, report).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().starts_with("error_code,count"));

    // Nothing else of the workspace: the run's input (named only in the call) and a file
    // beside the outputs that no result lists.
    expect_error(
        through_link(&app, &bob.access, &open, "logs/nginx.csv").await,
        404,
        "not_found",
    )
    .await;
    let beside = chart.replace("chart.png", "secret.txt");
    app.upload(&ana.access, &beside, "not shared").await;
    expect_error(
        through_link(&app, &bob.access, &open, &beside).await,
        404,
        "not_found",
    )
    .await;

    // A link that hides the tools' outputs hides their files too.
    let hidden = share(&app, &ana.access, &conv, true).await;
    expect_error(
        through_link(&app, &bob.access, &hidden, chart).await,
        404,
        "not_found",
    )
    .await;
    let page: Value = app
        .get_as(&bob.access, &format!("/api/shares/{hidden}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        !page.to_string().contains("chart.png"),
        "the hidden link names no output: {page}"
    );

    // The Markdown export links the files to the file route.
    let md = app
        .get_as(
            &ana.access,
            &format!("/api/conversations/{conv}/export?format=markdown"),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        md.contains(&format!("[chart.png](/api/files/{chart})")),
        "{md}"
    );
    assert!(
        md.contains(&format!("[report.csv](/api/files/{report})")),
        "{md}"
    );
}
