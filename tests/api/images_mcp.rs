//! An MCP tool's image content (issue 44 item 4): kept as a file of the caller's workspace
//! (`outputs/<conversation>/mcp/…`, checked and normalised like an upload), listed in the
//! tool output's `data.files` so the chat shows it after a reload, and given back to a model
//! that reads images as an image part of the tool result — a note for one that does not.
//! A hostile server's images (wrong type, SVG posing as PNG, bad base64, oversized, a
//! dimension bomb) become notes the model reads, never an error of the call.

use agentchat::tools::mcp::McpServerConfig;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::images::{b64, seeing_catalogue};

const TINY: &str = "everything__get-tiny-image";
pub(crate) const PICTURES: &str = "pics__pictures";

/// `tests/mcp/image_server.py` over stdio, as server `pics`.
pub(crate) fn image_server(peers: &Peers) -> McpServerConfig {
    let mut c = McpServerConfig::http("pics", "http://unused/");
    c.url = None;
    c.command = Some(peers.dir.join(".venv/bin/python").display().to_string());
    c.args = vec![peers.dir.join("image_server.py").display().to_string()];
    c.timeout_ms = 15_000;
    c
}

/// The `tool_result` event of a turn.
pub(crate) fn tool_result(events: &[SseEvent]) -> Value {
    events
        .iter()
        .find(|e| e.event == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {events:?}"))
        .data
        .clone()
}

/// The bytes of `path` in the caller's workspace.
pub(crate) async fn file(app: &TestApp, token: &str, path: &str) -> Vec<u8> {
    let r = app
        .get_as(token, &format!("/api/files/{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.bytes().await.unwrap().to_vec()
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The image parts an OpenAI request carries after its tool messages.
fn openai_images(request: &Value) -> Vec<Value> {
    let messages = request["body"]["messages"].as_array().unwrap();
    let tool = messages.iter().rposition(|m| m["role"] == "tool").unwrap();
    messages[tool + 1..]
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|p| p["type"] == "image_url")
        .cloned()
        .collect()
}

/// The text of the (first) tool message of an OpenAI request.
fn openai_tool_text(request: &Value) -> String {
    let messages = request["body"]["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_mcp_tools_image_is_kept_shown_and_given_to_a_model_that_reads_images() {
    let Some(peers) = Peers::get() else { return };
    let (_everything, url) = peers.everything().await;
    let fake = FakeUpstream::start().await;
    let (app, [admin, u]) = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .mcp_registered(json!({"name": "everything", "url": url, "timeout_ms": 10000}))
        .start_as(["boss", "viewer"])
        .await;
    app.wait_mcp(&admin.access, "everything", "connected", Some(TINY))
        .await;
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["everything__*"]}))
        .await;
    assert_eq!(r.status(), 200);

    for model in ["eyes", "claude", "blind"] {
        fake.push(Reply::tool_call("t1", TINY, "{}"));
        fake.push(Reply::text("the MCP logo"));
        let conv = app
            .create_conversation_with(&u.access, json!({"model": model}))
            .await;
        let before = fake.request_count();
        let events = app.chat(&u.access, &conv, "show me the logo").await;
        let result = tool_result(&events);
        assert_eq!(result["success"], true, "{result}");

        // Kept as a file of the conversation's outputs, listed with its type, size, digest.
        let listed = &result["data"]["files"];
        assert_eq!(listed.as_array().unwrap().len(), 1, "{result}");
        let path = listed[0]["path"].as_str().unwrap().to_owned();
        assert!(
            path.starts_with(&format!("outputs/{conv}/mcp/{TINY}-")) && path.ends_with(".png"),
            "{path}"
        );
        let stored = file(&app, &u.access, &path).await;
        assert_eq!(
            listed[0],
            json!({"path": path, "mime": "image/png", "bytes": stored.len(), "sha256": sha256(&stored)})
        );
        let img = image::load_from_memory(&stored).unwrap();
        assert_eq!((img.width(), img.height()), (20, 20));
        // The model's text keeps the blocks in order, the image by what was kept.
        let content = &result["data"]["content"];
        assert_eq!(content[0], "Here's the image you requested:");
        assert_eq!(
            content[1],
            json!({"type": "image", "path": path, "mime_type": "image/png",
                   "bytes": stored.len(), "width": 20, "height": 20})
        );
        assert_eq!(content[2], "The image above is the MCP logo.");
        assert!(!result.to_string().contains("iVBORw0KGgo"), "{result}");

        // The second request gives the image back (or names it to the blind model).
        let second = &fake.requests()[before + 1];
        let png = b64(&stored);
        match model {
            "eyes" => assert_eq!(
                openai_images(second),
                [
                    json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}})
                ]
            ),
            "claude" => {
                let results: Vec<&Value> = second["body"]["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|m| m["content"].as_array().into_iter().flatten())
                    .filter(|b| b["type"] == "tool_result")
                    .collect();
                let parts = results[0]["content"].as_array().unwrap();
                assert_eq!(parts[0]["type"], "text");
                assert_eq!(
                    parts[1],
                    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
                );
                assert_eq!(parts.len(), 2);
            }
            _ => {
                let text = openai_tool_text(second);
                assert!(
                    text.contains("which this model cannot see") && text.contains(&path),
                    "{text}"
                );
                assert!(openai_images(second).is_empty());
            }
        }

        // After a reload the stored tool message still lists the file for the chat to show.
        let reloaded = app.conversation(&u.access, &conv).await;
        let tool = reloaded["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()
            .clone();
        let envelope: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
        assert_eq!(envelope["data"]["files"][0]["path"], path.as_str());
    }
}

#[tokio::test]
async fn hostile_mcp_images_become_notes_and_the_model_gets_only_what_passed() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [admin, u]) = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .settings(|s| s.tools.quota.max_file_bytes = 64 * 1024)
        .mcp_peer(image_server(&peers))
        .start_as(["boss", "target"])
        .await;
    app.wait_mcp(&admin.access, "pics", "connected", Some(PICTURES))
        .await;
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["pics__*"]}))
        .await;
    assert_eq!(r.status(), 200);

    let kinds = ["svg", "svg_as_png", "bad_base64", "oversize", "bomb", "ok"];
    fake.push(Reply::tool_call(
        "t1",
        PICTURES,
        json!({"kinds": kinds, "size": 100_000}).to_string(),
    ));
    fake.push(Reply::text("one picture passed"));
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    let before = fake.request_count();
    let events = app.chat(&u.access, &conv, "pictures please").await;
    let result = tool_result(&events);
    assert_eq!(result["success"], true, "{result}");
    let content = result["data"]["content"].as_array().unwrap();
    assert_eq!(content.len(), kinds.len() + 2, "{result}");
    let note = |i: usize| content[i + 1]["note"].as_str().unwrap_or("").to_owned();
    let expected = [
        "its type `image/svg+xml` is not accepted (PNG, JPEG, WebP or GIF only)",
        "its bytes are not PNG",
        "its data is not valid base64",
        "it is larger than the 65536 bytes accepted for an image",
        "40 megapixels",
    ];
    for (i, words) in expected.iter().enumerate() {
        let n = note(i);
        assert!(
            n.starts_with("the image was not kept: ") && n.contains(words),
            "{}: {n}",
            kinds[i]
        );
        assert!(content[i + 1].get("path").is_none());
    }
    assert_eq!(
        (content[6]["width"].as_u64(), content[6]["height"].as_u64()),
        (Some(30), Some(20))
    );
    // Only the honest image was saved and listed; none of the hostile bytes came through.
    let listed = result["data"]["files"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{result}");
    let path = listed[0]["path"].as_str().unwrap();
    assert_eq!(content[6]["path"], path);
    let text = result.to_string();
    assert!(!text.contains("PHN2Zy") && !text.contains("not base64 at all"));
    let files: Value = app
        .get_as(&u.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let saved: Vec<&str> = files["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .filter(|p| p.contains("/mcp/"))
        .collect();
    assert_eq!(saved, [path]);

    // The model reads the notes, and sees the one image that passed.
    let second = &fake.requests()[before + 1];
    let png = b64(&file(&app, &u.access, path).await);
    assert_eq!(
        openai_images(second),
        [
            json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}})
        ]
    );
    let told = openai_tool_text(second);
    assert!(
        told.contains("not valid base64") && told.contains("40 megapixels"),
        "{told}"
    );

    // Three honest images to a model that takes two per request: two parts and a note.
    fake.push(Reply::tool_call(
        "t2",
        PICTURES,
        json!({"kinds": ["ok", "ok", "ok"]}).to_string(),
    ));
    fake.push(Reply::text("two of three"));
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    let before = fake.request_count();
    let events = app.chat(&u.access, &conv, "three please").await;
    let result = tool_result(&events);
    let listed = result["data"]["files"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{result}");
    let second = &fake.requests()[before + 1];
    assert_eq!(openai_images(second).len(), 2);
    let told = openai_tool_text(second);
    let third = listed[2]["path"].as_str().unwrap();
    assert!(
        told.contains("over the model's image limits") && told.contains(third),
        "{told}"
    );
}
