use agentchat_tests::*;
use serde_json::{json, Value};

async fn two_users(app: &TestApp) -> (Session, Session) {
    (app.signed_up("root").await, app.signed_up("member1").await)
}

#[tokio::test]
async fn members_get_403_on_admin_routes() {
    let app = TestApp::builder().start().await;
    let (_, member) = two_users(&app).await;
    let r = app
        .get_as(&member.access, "/api/admin/users")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
    let r = app
        .post_as(&member.access, "/api/admin/users")
        .json(&json!({"username": "x", "password": "long-enough", "role": "admin"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
    let r = app
        .patch_as(
            &member.access,
            &format!("/api/admin/users/{}", member.user_id),
        )
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
}

#[tokio::test]
async fn admin_lists_and_creates_users() {
    let app = TestApp::builder().start().await;
    let (admin, _) = two_users(&app).await;
    let r = app
        .post_as(&admin.access, "/api/admin/users")
        .json(&json!({"username": "made", "password": "long-enough", "role": "member"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let list: Value = app
        .get_as(&admin.access, "/api/admin/users")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["root", "member1", "made"]);
    assert!(list["items"][0].get("password_hash").is_none());
    assert_eq!(app.login("made", "long-enough").await.status(), 200);
    let r = app
        .post_as(&admin.access, "/api/admin/users")
        .json(&json!({"username": "ghost", "password": "long-enough", "role": "wizard"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 422, "unknown_role").await;
}

#[tokio::test]
async fn role_change_invalidates_existing_access_tokens() {
    let app = TestApp::builder().start().await;
    let (admin, member) = two_users(&app).await;
    let r = app
        .patch_as(
            &admin.access,
            &format!("/api/admin/users/{}", member.user_id),
        )
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["role"], "admin");
    let r = app.get_as(&member.access, "/api/me").send().await.unwrap();
    expect_error(r, 401, "unauthenticated").await;
    // A fresh token carries the new role.
    let fresh = app.session_for("member1", "password-of-member1").await;
    let r = app
        .get_as(&fresh.access, "/api/admin/users")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn disabled_user_is_locked_out_everywhere() {
    let app = TestApp::builder().start().await;
    let (admin, member) = two_users(&app).await;
    let conversation = app.new_conversation(&member.access).await;
    let r = app
        .patch_as(
            &admin.access,
            &format!("/api/admin/users/{}", member.user_id),
        )
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    expect_error(
        app.get_as(&member.access, "/api/me").send().await.unwrap(),
        401,
        "unauthenticated",
    )
    .await;
    // Sending a message checks the account inside the turn's first transaction: refused,
    // and nothing of the turn is kept.
    let r = app
        .send_message(&member.access, &conversation, "still here?")
        .await;
    let body = expect_error(r, 401, "unauthenticated").await;
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("disabled"));
    let r = app
        .post_json(
            "/api/auth/refresh",
            &json!({"refresh_token": member.refresh}),
        )
        .await;
    expect_error(r, 401, "unauthenticated").await;
    // The right password of a disabled account is answered exactly as a wrong one.
    let right = app.login("member1", "password-of-member1").await;
    assert_eq!(right.status(), 401);
    let right = right.text().await.unwrap();
    let wrong = app
        .login("member1", "not-the-password")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(right, wrong);
    // Re-enabled, the user can sign in again.
    app.patch_as(
        &admin.access,
        &format!("/api/admin/users/{}", member.user_id),
    )
    .json(&json!({"disabled": false}))
    .send()
    .await
    .unwrap();
    let again = app.session_for("member1", "password-of-member1").await;
    let stored = app.conversation(&again.access, &conversation).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 0);
    let events = app.chat(&again.access, &conversation, "hello again").await;
    assert_eq!(event_names(&events).last().unwrap(), "done");
}

#[tokio::test]
async fn a_revoked_token_cannot_start_a_turn() {
    let app = TestApp::builder().start().await;
    let (admin, member) = two_users(&app).await;
    let conversation = app.new_conversation(&member.access).await;
    let r = app
        .patch_as(
            &admin.access,
            &format!("/api/admin/users/{}", member.user_id),
        )
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app.send_message(&member.access, &conversation, "hi").await;
    let body = expect_error(r, 401, "unauthenticated").await;
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("revoked"));
    let fresh = app.session_for("member1", "password-of-member1").await;
    let stored = app.conversation(&fresh.access, &conversation).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 0);
    // Not left claimed: the next turn starts.
    let events = app.chat(&fresh.access, &conversation, "hi").await;
    assert_eq!(event_names(&events).last().unwrap(), "done");
}

#[tokio::test]
async fn last_admin_cannot_be_demoted_or_disabled() {
    let app = TestApp::builder().start().await;
    let (admin, _) = two_users(&app).await;
    for change in [json!({"role": "member"}), json!({"disabled": true})] {
        let r = app
            .patch_as(
                &admin.access,
                &format!("/api/admin/users/{}", admin.user_id),
            )
            .json(&change)
            .send()
            .await
            .unwrap();
        expect_error(r, 409, "last_admin").await;
    }
}

#[tokio::test]
async fn budget_override_set_and_cleared() {
    let app = TestApp::builder().start().await;
    let (admin, member) = two_users(&app).await;
    let path = format!("/api/admin/users/{}", member.user_id);
    let r: Value = app
        .patch_as(&admin.access, &path)
        .json(&json!({"token_budget": 5000}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["token_budget"], 5000);
    let me: Value = app
        .get_as(&member.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["budget"]["limit"], 5000);
    // Leaving the field out keeps it; null clears it.
    let r: Value = app
        .patch_as(&admin.access, &path)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["token_budget"], 5000);
    let r: Value = app
        .patch_as(&admin.access, &path)
        .json(&json!({"token_budget": null}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["token_budget"].is_null());
    let r = app
        .patch_as(&admin.access, &path)
        .json(&json!({"token_budget": -1}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_budget").await;
    let r = app
        .patch_as(&admin.access, &path)
        .json(&json!({"token_budget": "lots"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_json").await;
}

#[tokio::test]
async fn patching_unknown_user_is_404() {
    let app = TestApp::builder().start().await;
    let (admin, _) = two_users(&app).await;
    let r = app
        .patch_as(
            &admin.access,
            &format!("/api/admin/users/{}", uuid::Uuid::new_v4()),
        )
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}
