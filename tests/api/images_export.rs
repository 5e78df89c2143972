//! Images kept and carried (issue 44 item 5): the exports link an attached image and a tool's
//! image to the file route (Markdown embeds them; JSON carries references — path, type,
//! size, digest — never the bytes); a share link serves a tool's image within its scope; a
//! copy of one's own conversation keeps them, a copy of someone else's link drops the
//! references to files only the sharer may read.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::images::{b64, seeing_catalogue, upload_png};
use crate::images_mcp::{file, image_server, PICTURES};

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

async fn get_text(app: &TestApp, token: &str, path: &str) -> String {
    let r = app.get_as(token, path).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.text().await.unwrap()
}

async fn fork(app: &TestApp, token: &str, path: &str, at: &str) -> Value {
    let r = app
        .post_as(token, path)
        .json(&json!({"at_message_id": at}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{path}");
    r.json().await.unwrap()
}

/// The messages of `conv` with role `role`.
fn of_role(conv: &Value, role: &str) -> Vec<Value> {
    conv["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .cloned()
        .collect()
}

fn envelope(tool_message: &Value) -> Value {
    serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn images_are_exported_as_references_and_forks_keep_only_what_the_forker_may_read() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [admin, ana, bob]) = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .mcp_peer(image_server(&peers))
        .start_as(["boss", "ana", "bob"])
        .await;
    app.wait_mcp(&admin.access, "pics", "connected", Some(PICTURES))
        .await;
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["pics__*"]}))
        .await;
    assert_eq!(r.status(), 200);

    // Ana asks about a photo; the model calls a tool that returns a picture.
    let photo = upload_png(&app, &ana.access, "shots/photo 1.png", 64, 32).await;
    fake.push(Reply::tool_call(
        "t1",
        PICTURES,
        json!({"kinds": ["ok"]}).to_string(),
    ));
    fake.push(Reply::text("a green photo and a red picture"));
    let conv = app
        .create_conversation_with(&ana.access, json!({"model": "eyes"}))
        .await;
    let r = app
        .post_as(&ana.access, &format!("/api/conversations/{conv}/messages"))
        .json(&json!({"content": "Compare these", "attachments": ["shots/photo 1.png"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let stored = app.conversation(&ana.access, &conv).await;
    let tool = &of_role(&stored, "tool")[0];
    let picture_path = envelope(tool)["data"]["files"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let picture = file(&app, &ana.access, &picture_path).await;
    let picture_name = picture_path.rsplit('/').next().unwrap();

    // Markdown embeds both images, linked to the file route.
    let md = get_text(
        &app,
        &ana.access,
        &format!("/api/conversations/{conv}/export"),
    )
    .await;
    assert!(
        md.contains("_Files:_ ![photo 1.png](/api/files/shots/photo%201.png)"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "_Files:_ ![{picture_name}](/api/files/{picture_path})"
        )),
        "{md}"
    );

    // JSON carries references, never the bytes.
    let text = get_text(
        &app,
        &ana.access,
        &format!("/api/conversations/{conv}/export?format=json"),
    )
    .await;
    assert!(!text.contains(&b64(&photo)) && !text.contains(&b64(&picture)));
    assert!(!text.contains("iVBORw0KGgo"), "no PNG in the export");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let question = &of_role(&doc, "user")[0];
    assert_eq!(
        question["files"],
        json!([{"path": "shots/photo 1.png", "mime": "image/png", "bytes": photo.len(),
                "sha256": sha256(&photo), "source": "attachment", "image": true,
                "href": "/api/files/shots/photo%201.png"}])
    );
    assert_eq!(
        of_role(&doc, "tool")[0]["files"],
        json!([{"path": picture_path, "mime": "image/png", "bytes": picture.len(),
                "sha256": sha256(&picture), "source": "tool_output", "image": true,
                "href": format!("/api/files/{picture_path}")}])
    );
    assert!(of_role(&doc, "assistant")
        .iter()
        .all(|m| m.get("files").is_none()));

    // A link serves the tool's image within its scope.
    let link: Value = app
        .post_as(&ana.access, &format!("/api/conversations/{conv}/shares"))
        .json(&json!({"scope": "org"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = link["id"].as_str().unwrap();
    let r = app
        .get_as(
            &bob.access,
            &format!("/api/shares/{id}/files/{picture_path}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().to_vec(), picture);

    // Ana's own copy keeps the attachment and the tool's image (her workspace).
    let answer = of_role(&stored, "assistant").last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let own = fork(
        &app,
        &ana.access,
        &format!("/api/conversations/{conv}/fork"),
        &answer,
    )
    .await;
    let copy = app
        .conversation(&ana.access, own["id"].as_str().unwrap())
        .await;
    assert_eq!(
        of_role(&copy, "user")[0]["attachments"][0]["path"],
        "shots/photo 1.png"
    );
    let copied_tool = envelope(&of_role(&copy, "tool")[0]);
    assert_eq!(
        copied_tool["data"]["files"][0]["path"],
        picture_path.as_str()
    );
    assert_eq!(file(&app, &ana.access, &picture_path).await, picture);

    // Bob's copy of the link drops what only Ana may read, and says which files.
    let theirs = fork(
        &app,
        &bob.access,
        &format!("/api/shares/{id}/fork"),
        &answer,
    )
    .await;
    let copy_id = theirs["id"].as_str().unwrap().to_owned();
    let copy = app.conversation(&bob.access, &copy_id).await;
    let q = &of_role(&copy, "user")[0];
    assert!(q.get("attachments").is_none(), "{q}");
    assert!(q["content"]
        .as_str()
        .unwrap()
        .contains("not copied: shots/photo 1.png"));
    let copied_tool = envelope(&of_role(&copy, "tool")[0]);
    assert!(copied_tool["data"].get("files").is_none(), "{copied_tool}");
    assert_eq!(
        copied_tool["data"]["files_not_copied"],
        json!([picture_path])
    );
    let doc: Value = serde_json::from_str(
        &get_text(
            &app,
            &bob.access,
            &format!("/api/conversations/{copy_id}/export?format=json"),
        )
        .await,
    )
    .unwrap();
    assert!(doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m.get("files").is_none()));
    // (Nor could Bob read them in his own workspace.)
    let r = app
        .get_as(&bob.access, &format!("/api/files/{picture_path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
