//! Earlier messages' images go to the model again (issue 44, DESIGN §16): "what was in the
//! first picture?" is answered by showing a model that reads images the images of the
//! history it is given, re-read from the workspace, as each provider's native parts; newest
//! first within the model's `max_images` per request; a file removed or changed since it was
//! sent is named, not shown; a model that does not read images gets the file names, as
//! before, and is not refused for them.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::images::{b64, make, put_file, seeing_catalogue, send_with, NOTE};

/// The base64 of every image part of a model request, in order, whatever its provider
/// (OpenAI `image_url` data URLs, Anthropic `image` blocks, at any depth).
pub(crate) fn image_parts(request: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.get("type") == Some(&json!("image_url")) {
                    let url = v["image_url"]["url"].as_str().unwrap_or("");
                    out.push(url.split_once(',').map_or("", |(_, d)| d).to_owned());
                } else if m.get("type") == Some(&json!("image")) && m.contains_key("source") {
                    out.push(v["source"]["data"].as_str().unwrap_or("").to_owned());
                } else {
                    m.values().for_each(|x| walk(x, out));
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&request["body"]["messages"], &mut out);
    out
}

/// The user messages of the `n`th model request.
fn users(fake: &FakeUpstream, n: usize) -> Vec<Value> {
    fake.requests()[n]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .cloned()
        .collect()
}

/// Uploads a 40 × 30 PNG of one colour at `path`; the bytes stored.
async fn colour(app: &TestApp, token: &str, path: &str, rgb: [u8; 3]) -> Vec<u8> {
    let png = make::solid(40, 30, rgb, image::ImageFormat::Png);
    let (status, answer) = put_file(app, token, path, png).await;
    assert!(status == 201 || status == 200, "{answer}");
    crate::images_mcp::file(app, token, path).await
}

async fn say(app: &TestApp, token: &str, conv: &str, text: &str, files: &[&str]) {
    let r = send_with(app, token, conv, text, files).await;
    assert_eq!(r.status(), 200);
    let _ = r.text().await;
}

fn answering(fake: &FakeUpstream) {
    fake.set_default(Some(Reply::text("a green rectangle").into()));
}

#[tokio::test]
async fn an_image_sent_earlier_goes_again_as_each_providers_native_part() {
    let fake = FakeUpstream::start().await;
    answering(&fake);
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("recall").await;
    let stored = colour(&app, &u.access, "pics/sq.png", [20, 160, 40]).await;
    let note = format!(
        "What is this?\n\n{NOTE}\n- pics/sq.png ({} bytes)",
        stored.len()
    );
    let data = b64(&stored);
    for (n, model) in ["eyes", "claude"].into_iter().enumerate() {
        let conv = app
            .create_conversation_with(&u.access, json!({"model": model}))
            .await;
        say(&app, &u.access, &conv, "What is this?", &["pics/sq.png"]).await;
        say(
            &app,
            &u.access,
            &conv,
            "what was in the first picture?",
            &[],
        )
        .await;
        let second = 2 * n + 1;
        let asked = users(&fake, second);
        assert_eq!(asked.len(), 2, "{asked:?}");
        let first = match model {
            "eyes" => json!([
                {"type": "text", "text": note},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}},
            ]),
            _ => json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
                {"type": "text", "text": note},
            ]),
        };
        assert_eq!(asked[0]["content"], first, "{model}");
        // Once, with the message that carried it; the new message has none.
        assert_eq!(
            image_parts(&fake.requests()[second]),
            std::slice::from_ref(&data)
        );
        assert!(
            !asked[1]["content"].to_string().contains(&data),
            "{model}: {}",
            asked[1]
        );
    }
}

#[tokio::test]
async fn the_newest_images_go_within_max_images_and_the_rest_are_named() {
    let fake = FakeUpstream::start().await;
    answering(&fake);
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("many").await;
    let a = b64(&colour(&app, &u.access, "a.png", [200, 0, 0]).await);
    let b = b64(&colour(&app, &u.access, "b.png", [0, 200, 0]).await);
    let c = b64(&colour(&app, &u.access, "c.png", [0, 0, 200]).await);
    // `eyes` takes two images per request.
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    say(&app, &u.access, &conv, "first", &["a.png"]).await;
    say(&app, &u.access, &conv, "second", &["b.png"]).await;
    assert_eq!(image_parts(&fake.requests()[1]), [a.clone(), b.clone()]);
    // The new message's image counts: one earlier image left, the newest.
    say(&app, &u.access, &conv, "third", &["c.png"]).await;
    assert_eq!(image_parts(&fake.requests()[2]), [b.clone(), c.clone()]);
    say(&app, &u.access, &conv, "which was red?", &[]).await;
    assert_eq!(image_parts(&fake.requests()[3]), [b, c]);
    let first = &users(&fake, 3)[0]["content"];
    let text = first.as_str().unwrap_or_else(|| panic!("{first}"));
    assert!(
        text.starts_with("first\n\n")
            && text.contains("- a.png (")
            && text.ends_with(
                "(Images of this message not shown to you again: a.png (over the model's \
                 image limits).)"
            ),
        "{text}"
    );
}

#[tokio::test]
async fn an_image_removed_or_changed_since_it_was_sent_is_named_not_shown() {
    let fake = FakeUpstream::start().await;
    answering(&fake);
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("moved").await;
    colour(&app, &u.access, "a.png", [200, 0, 0]).await;
    colour(&app, &u.access, "b.png", [0, 200, 0]).await;
    let kept = b64(&colour(&app, &u.access, "c.png", [0, 0, 200]).await);
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    say(&app, &u.access, &conv, "look", &["a.png", "b.png"]).await;
    say(&app, &u.access, &conv, "and this", &["c.png"]).await;
    let r = app.delete_as(&u.access, "/api/files/a.png").send().await;
    assert_eq!(r.unwrap().status(), 204);
    // Replaced by another image of the very same size: only the digest tells.
    let before = crate::images_mcp::file(&app, &u.access, "b.png").await;
    let after = colour(&app, &u.access, "b.png", [0, 201, 0]).await;
    assert_eq!(before.len(), after.len());
    assert_ne!(before, after);
    say(&app, &u.access, &conv, "what did I show you?", &[]).await;
    assert_eq!(image_parts(&fake.requests()[2]), [kept]);
    let text = users(&fake, 2)[0]["content"].as_str().unwrap().to_owned();
    assert!(
        text.starts_with("look\n\n")
            && text.contains("- a.png (")
            && text.contains("- b.png (")
            && text.ends_with(
                "(Images of this message not shown to you again: a.png (no longer in the \
                 workspace); b.png (changed since it was sent).)"
            ),
        "{text}"
    );
}

#[tokio::test]
async fn a_model_that_cannot_see_gets_earlier_images_named_and_is_not_refused() {
    let fake = FakeUpstream::start().await;
    answering(&fake);
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("switcher").await;
    let stored = colour(&app, &u.access, "a.png", [9, 9, 9]).await;
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    say(&app, &u.access, &conv, "What is this?", &["a.png"]).await;
    let r = app
        .patch_as(&u.access, &format!("/api/conversations/{conv}"))
        .json(&json!({"model": "blind"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    say(&app, &u.access, &conv, "and now?", &[]).await;
    let request = &fake.requests()[1];
    assert_eq!(request["body"]["model"], "gpt-text");
    assert!(image_parts(request).is_empty(), "{request}");
    assert_eq!(
        users(&fake, 1)[0]["content"],
        json!(format!(
            "What is this?\n\n{NOTE}\n- a.png ({} bytes)",
            stored.len()
        ))
    );
}

const PLOT: &str = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
plt.plot([1, 3, 2])\nplt.savefig('/mnt/data/outputs/chart.png')\n";

#[tokio::test]
async fn a_chart_a_tool_saved_in_an_earlier_turn_is_shown_again() {
    let fake = FakeUpstream::start().await;
    let ws = std::env::temp_dir().join(format!(
        "agentchat-img-hist-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let (app, [_admin, u]) = crate::code_interpreter::granted(&fake, ws)
        .settings(seeing_catalogue(&fake))
        .start_as(["boss", "plotter"])
        .await;
    for model in ["eyes", "claude"] {
        let base = fake.request_count();
        fake.push(Reply::tool_call(
            "t1",
            "run_python",
            json!({"code": PLOT}).to_string(),
        ));
        fake.push(Reply::text("a line"));
        fake.push(Reply::text("it rose, then fell"));
        let conv = app
            .create_conversation_with(&u.access, json!({"model": model}))
            .await;
        let events = app.chat(&u.access, &conv, "plot it").await;
        let result = crate::images_mcp::tool_result(&events);
        // The run's images (the chart, and any figure left open), as the tool listed them.
        let mut charts = Vec::new();
        for f in result["data"]["files"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            assert!(path.starts_with(&format!("outputs/{conv}/")), "{path}");
            charts.push(b64(&crate::images_mcp::file(&app, &u.access, path).await));
        }
        assert!(!charts.is_empty(), "{result}");
        app.chat(&u.access, &conv, "what did the chart show?").await;
        let requests = fake.requests();
        assert_eq!(requests.len(), base + 3);
        assert_eq!(image_parts(&requests[base + 1]), charts, "{model}");
        assert_eq!(image_parts(&requests[base + 2]), charts, "{model}");
    }
}

/// A stored tool result is not trusted to name files: one listing `uploads/secret.png` (an
/// API client's own tool result, stored with the conversation it started) never has the
/// model shown that file, while the conversation's other images are shown again.
#[tokio::test]
async fn a_stored_tool_result_naming_a_file_outside_its_outputs_shows_nothing() {
    let fake = FakeUpstream::start().await;
    answering(&fake);
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("target").await;
    let secret = colour(&app, &u.access, "uploads/secret.png", [1, 2, 3]).await;
    let pic = b64(&colour(&app, &u.access, "pic.png", [4, 5, 6]).await);
    let listing = json!({"success": true, "error": null, "data": {"files": [
        {"path": "uploads/secret.png", "mime": "image/png", "bytes": secret.len()},
        {"path": "outputs/../uploads/secret.png", "mime": "image/png", "bytes": secret.len()},
    ]}});
    let r = app
        .post_as(&u.access, "/v1/chat/completions")
        .json(&json!({"model": "eyes", "messages": [
            {"role": "user", "content": "peek"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "peek", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": listing.to_string()},
        ], "tools": [{"type": "function", "function": {"name": "peek", "parameters": {"type": "object"}}}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let _ = r.text().await;
    let convs: Value = app
        .get_as(&u.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let conv = convs["items"][0]["id"].as_str().unwrap().to_owned();
    say(&app, &u.access, &conv, "and this one", &["pic.png"]).await;
    say(&app, &u.access, &conv, "what did you see?", &[]).await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let secret = b64(&secret);
    for (n, request) in requests.iter().enumerate() {
        assert!(
            !request.to_string().contains(&secret),
            "request {n} showed the secret"
        );
    }
    // The history's own image is shown again: the stored result was read and refused.
    assert_eq!(image_parts(&requests[2]), [pic]);
    let tool = requests[2]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap_or_else(|| panic!("{}", requests[2]));
    assert_eq!(tool["content"], json!(listing.to_string()));
}
