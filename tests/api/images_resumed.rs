//! A turn that paused for an approval goes on with the images it started with: the model
//! asked to act on a screenshot still sees the screenshot once the call is approved.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::json;

use crate::approvals::{approval_id, approve_and_follow, finish, write_call};
use crate::images::{b64, seeing_catalogue, send_with, upload_png};
use crate::images_history::image_parts;

#[tokio::test]
async fn an_approved_call_goes_on_with_the_turns_image_in_front_of_the_model() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, alice]) = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .settings(|s| s.durable.approval_ttl = std::time::Duration::from_secs(3600))
        .role(
            "member",
            json!({"tools": ["write_file"], "approvals": {"write_file": "user"}}),
        )
        .start_as(["boss", "alice"])
        .await;
    let stored = upload_png(&app, &alice.access, "pics/dialog.png", 64, 48).await;
    fake.push(write_call("c1", "notes.txt", "the dialog says: disk full"));
    fake.push(Reply::text("written down"));

    let conv = app.new_conversation(&alice.access).await;
    let r = send_with(
        &app,
        &alice.access,
        &conv,
        "note what this dialog says",
        &["pics/dialog.png"],
    )
    .await;
    assert_eq!(r.status(), 200);
    let events = parse_sse(&r.text().await.unwrap());
    let id = approval_id(&events);
    assert_eq!(image_parts(&fake.requests()[0]), [b64(&stored)]);

    let resumed = approve_and_follow(&app, &alice.access, &id).await;
    assert_eq!(finish(&resumed), "stop", "{resumed:?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        image_parts(&requests[1]),
        [b64(&stored)],
        "the resumed call shows the image again, once"
    );
}
