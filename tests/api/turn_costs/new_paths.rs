//! The ceilings of this wave's new paths (issue 43 item 4): a turn with an image attached
//! to a model that reads images, a turn whose model calls an MCP server's tool, and a turn
//! whose model runs Python in the code interpreter (the real jail, as
//! `code_interpreter.rs`). Counted as the plain turn is, on a server of their own: its
//! catalogue has a model that reads images, and its member may call both tools.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::pg_proxy::PgProxy;
use agentchat_tests::*;
use serde_json::json;

use super::{check, counted, fewest, one_turn, Measured, Route};
use crate::images::{make, put_file};

/// One provider on the fake and one model, the default, that reads images.
fn seeing(fake: &FakeUpstream) -> impl Fn(&mut agentchat::config::Settings) + Clone {
    let providers = json!([{"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(),
                            "max_retries": 0}]);
    let models = json!([{"name": "eyes", "provider": "oa", "upstream_model": "gpt-4o",
                         "input": ["text", "image"]}]);
    move |s| {
        s.providers = serde_json::from_value(providers.clone()).unwrap();
        s.models = serde_json::from_value(models.clone()).unwrap();
        s.llm.model = "eyes".into();
    }
}

fn time_call() -> Reply {
    Reply::tool_call(
        "m1",
        "time__get_current_time",
        json!({"timezone": "UTC"}).to_string(),
    )
}

fn python_call() -> Reply {
    Reply::tool_call(
        "p1",
        "run_python",
        json!({"code": "print(6*7)"}).to_string(),
    )
}

#[tokio::test]
async fn image_mcp_and_code_interpreter_turns_stay_under_their_ceilings() {
    // Without the MCP peers (said loudly by `Peers::get`) the other two are still counted.
    let peers = Peers::get();
    let fake = FakeUpstream::start().await;
    let proxy = PgProxy::start("127.0.0.1:5432".to_owned()).await;
    let mut builder = counted(TestApp::builder().settings(seeing(&fake)), &proxy)
        .budget("alice", Some(10_000_000));
    if let Some(p) = &peers {
        builder = builder.mcp_peer(p.time("time"));
    }
    let (app, [admin, member]) = builder.start_as(["boss", "alice"]).await;
    let mut tools = vec!["run_python"];
    if peers.is_some() {
        app.wait_mcp(
            &admin.access,
            "time",
            "connected",
            Some("time__get_current_time"),
        )
        .await;
        tools.push("time__*");
    }
    let r = app
        .put_role(&admin.access, "member", json!({ "tools": tools }))
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // Uploaded once (normalised then); each turn attaches the stored file.
    let png = make::solid(64, 48, [20, 160, 40], image::ImageFormat::Png);
    let (status, answer) = put_file(&app, &member.access, "pics/sq.png", png).await;
    assert_eq!(status, 201, "{answer}");

    let token = member.access.as_str();
    let image = Route::Attaching(token, &["pics/sq.png"]);
    let native = Route::Native(token);
    let text = || vec![Reply::text("42")];
    // Warm the pool, the caches, the jail and the MCP session.
    one_turn(&app, &proxy, &image, &fake, text()).await;
    one_turn(
        &app,
        &proxy,
        &native,
        &fake,
        vec![python_call(), Reply::text("warm")],
    )
    .await;
    if peers.is_some() {
        one_turn(
            &app,
            &proxy,
            &native,
            &fake,
            vec![time_call(), Reply::text("warm")],
        )
        .await;
    }

    let mut measured: Vec<(&str, Measured)> = vec![
        ("image", fewest(&app, &proxy, &image, &fake, text).await),
        (
            "python",
            fewest(&app, &proxy, &native, &fake, || {
                vec![python_call(), Reply::text("42")]
            })
            .await,
        ),
    ];
    if peers.is_some() {
        let mcp = fewest(&app, &proxy, &native, &fake, || {
            vec![time_call(), Reply::text("42")]
        })
        .await;
        measured.push(("mcp", mcp));
    }
    // Each model request of an image turn carried the image as a part.
    let requests = fake.requests();
    let with_image = requests
        .iter()
        .filter(|r| r["body"].to_string().contains("data:image/png;base64,"))
        .count();
    assert_eq!(with_image, 4, "one warm-up and three counted image turns");
    check(&measured);
}
