//! A hostile subset through the tool (issue 47 item 6): a memory bomb, the server's
//! environment at `/proc/1/environ`, another user's file by `..`, absolute path and symlink,
//! a symlink left in the outputs, and the server answering another user while a jail burns
//! CPU. Each is contained with a clear tool result; the demo model's analyse flow runs too.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::json;

use crate::code_interpreter::{granted, run, runs, NGINX_CSV};

fn ws() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("agentchat-ci-ws-{}", uuid::Uuid::new_v4().simple()))
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit_and_the_environment_is_empty() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = granted(&fake, ws())
        .settings(|s| s.sandbox.memory_mb = 256)
        .start_as(["boss", "ana"])
        .await;
    let bomb = "x = []\nwhile True:\n    x.append(bytearray(50 * 1024 * 1024))";
    let (result, _) = run(&app, &fake, &member.access, json!({"code": bomb})).await;
    let data = &result["data"];
    assert_eq!(data["limit_hit"], "memory", "{result}");
    assert_ne!(data["exit"], 0);
    assert_eq!(runs(&app).await[0].limit_hit.as_deref(), Some("memory"));

    let peek = "import os\nfor p in ('/proc/1/environ', '/proc/self/environ'):\n    \
                print(p, repr(open(p, 'rb').read()))\nprint('ENV', dict(os.environ))";
    let (result, _) = run(&app, &fake, &member.access, json!({"code": peek})).await;
    let out = result["data"]["stdout"].as_str().unwrap().to_owned();
    // The jail's environment is its own few variables, none of the server's.
    let mut leaks = vec![
        "DATABASE".to_owned(),
        "AGENTCHAT".into(),
        "CARGO".into(),
        "RUST".into(),
    ];
    leaks.extend(std::env::var("HOME").ok().filter(|h| h != "/tmp"));
    leaks.extend(std::env::var("PATH").ok().filter(|p| p != "/usr/bin:/bin"));
    for leak in leaks {
        assert!(!out.contains(&leak), "{leak} leaked: {out}");
    }
}

#[tokio::test]
async fn another_users_file_is_out_of_reach_by_dots_absolute_path_and_symlink() {
    let fake = FakeUpstream::start().await;
    let dir = ws();
    let (app, [_admin, member, other]) = granted(&fake, dir.clone())
        .start_as(["boss", "ana", "bob"])
        .await;
    app.upload(&other.access, "secret.csv", "top,secret\n1,2\n")
        .await;
    app.upload(&member.access, "mine.csv", "a\n1\n").await;
    let theirs = dir.join(other.user_id.to_string()).join("secret.csv");
    assert!(theirs.exists());
    std::os::unix::fs::symlink(
        &theirs,
        dir.join(member.user_id.to_string()).join("link.csv"),
    )
    .unwrap();
    for input in [
        format!("../{}/secret.csv", other.user_id),
        theirs.display().to_string(),
        "link.csv".to_owned(),
    ] {
        let (result, _) = run(
            &app,
            &fake,
            &member.access,
            json!({"code": "print(open('/mnt/data/x').read())", "inputs": [input]}),
        )
        .await;
        assert_eq!(result["success"], false, "{input}: {result}");
        let error = result["error"].as_str().unwrap();
        assert!(!error.contains("top,secret"), "{error}");
        if !input.starts_with('/') {
            assert!(
                !error.contains(dir.to_str().unwrap()),
                "no server path: {error}"
            );
        }
    }
    // A symlink left in the outputs is not followed, not saved, and said.
    let code = "import os\nos.symlink('/etc/passwd', '/mnt/data/outputs/passwd')\n\
                open('/mnt/data/outputs/ok.txt', 'w').write('fine')";
    let (result, conv) = run(&app, &fake, &member.access, json!({"code": code})).await;
    let data = &result["data"];
    let files = data["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{data}");
    assert_eq!(files[0]["path"], format!("outputs/{conv}/ok.txt"));
    assert!(data["not_saved"].to_string().contains("passwd"), "{data}");
    let r = app
        .get_as(&member.access, &format!("/api/files/outputs/{conv}/passwd"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn the_server_answers_another_user_while_a_jail_burns_cpu() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member, bystander]) = granted(&fake, ws())
        .settings(|s| s.sandbox.timeout_secs = 4)
        .start_as(["boss", "ana", "bob"])
        .await;
    let burn = json!({"code": "while True: pass"}).to_string();
    fake.push(Reply::tool_call("t1", "run_python", burn));
    fake.push(Reply::text("burnt"));
    let conv = app.new_conversation(&member.access).await;
    let (app_ref, token) = (&app, member.access.clone());
    let burning = async move { app_ref.chat(&token, &conv, "burn").await };
    let bystanding = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        fake.push(Reply::text("hello"));
        let conv = app.new_conversation(&bystander.access).await;
        let started = Instant::now();
        let events = app.chat(&bystander.access, &conv, "hi").await;
        (started.elapsed(), events)
    };
    let (burnt, (took, events)) = tokio::join!(burning, bystanding);
    assert!(
        took < Duration::from_secs(2),
        "the bystander waited {took:?}"
    );
    // The two turns share the fake's queue: the bystander gets one of the two answers.
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "stop",
        "{events:?}"
    );
    let result = burnt.iter().find(|e| e.event == "tool_result").unwrap();
    let data = &result.data["data"];
    assert!(
        data["timed_out"] == true || data["limit_hit"] == "cpu",
        "{data}"
    );
    assert_eq!(runs(&app).await[0].outcome, "timeout");
}

#[tokio::test]
async fn the_demo_model_analyses_an_attached_csv() {
    let (app, [_admin, member]) = TestApp::builder()
        .role("member", json!({"tools": ["run_python", "read_file"]}))
        .start_as(["boss", "ana"])
        .await;
    app.upload(&member.access, "nginx.csv", NGINX_CSV).await;
    let conv = app.new_conversation(&member.access).await;
    let r = app
        .post_as(
            &member.access,
            &format!("/api/conversations/{conv}/messages"),
        )
        .json(&json!({"content": "analyse this by error_code", "attachments": ["nginx.csv"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = parse_sse(&r.text().await.unwrap());
    let text = streamed_text(&events);
    assert!(
        text.contains("3 distinct error_code values in 6 rows, 504 the most frequent (3 rows)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("outputs/{conv}/chart.png")),
        "{text}"
    );
    let r = app
        .get_as(
            &member.access,
            &format!("/api/files/outputs/{conv}/report.csv"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.text().await.unwrap(),
        "error_code,count\n504,3\n500,2\n404,1\n"
    );
}
