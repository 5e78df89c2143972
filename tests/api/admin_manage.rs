//! Issue 22 item 8: an admin deletes accounts and resets passwords; nobody deletes or
//! disables themselves.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

async fn count(app: &TestApp, sql: &str, id: uuid::Uuid) -> i64 {
    let mut db = app.db().await;
    diesel::sql_query(sql)
        .bind::<diesel::sql_types::Uuid, _>(id)
        .get_result::<Count>(&mut db)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn deleting_a_user_removes_what_they_own_and_keeps_the_accountability() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let gone = app.signed_up("leaver").await;
    let conv = app.new_conversation(&gone.access).await;
    let events = app.chat(&gone.access, &conv, "hello there").await;
    assert_eq!(events.last().unwrap().event, "done");
    let r = app
        .client
        .put(app.url("/api/files/notes/plan.txt"))
        .bearer_auth(&gone.access)
        .body("my plan")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let key: Value = app
        .post_as(&gone.access, "/api/keys")
        .json(&json!({"name": "laptop"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = key["key"].as_str().unwrap().to_owned();
    let usage_before = count(
        &app,
        "SELECT count(*) AS n FROM usage_records WHERE user_id = $1",
        gone.user_id,
    )
    .await;
    assert!(usage_before > 0, "the chat was not recorded as usage");
    assert!(app.workspace_dir.join(gone.user_id.to_string()).exists());

    let r = app
        .delete_as(&admin.access, &format!("/api/admin/users/{}", gone.user_id))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());

    // Every way in is closed: access token, refresh token, password, API key.
    let r = app.get_as(&gone.access, "/api/me").send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": gone.refresh}))
        .await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        app.login("leaver", "password-of-leaver").await.status(),
        401
    );
    let r = app
        .client
        .get(app.url("/v1/models"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // What they owned is gone; the usage ledger and a tombstone stay.
    for table in ["conversations", "api_keys", "refresh_tokens", "users"] {
        let column = if table == "users" { "id" } else { "user_id" };
        let sql = format!("SELECT count(*) AS n FROM {table} WHERE {column} = $1");
        assert_eq!(count(&app, &sql, gone.user_id).await, 0, "{table}");
    }
    let messages = count(
        &app,
        "SELECT count(*) AS n FROM messages WHERE conversation_id = $1",
        conv.parse().unwrap(),
    )
    .await;
    assert_eq!(messages, 0);
    assert!(!app.workspace_dir.join(gone.user_id.to_string()).exists());
    let kept = count(
        &app,
        "SELECT count(*) AS n FROM usage_records WHERE user_id = $1",
        gone.user_id,
    )
    .await;
    assert_eq!(kept, usage_before);
    let usage: Value = app
        .get_as(&admin.access, "/api/admin/usage")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        usage.to_string().contains("leaver (deleted)"),
        "the usage report names the deleted account: {usage}"
    );

    // The trail says who deleted whom, and what the account was.
    let changes: Value = app
        .get_as(&admin.access, "/api/admin/changes?kind=user.delete")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = &changes["items"][0];
    assert_eq!(row["actor_name"], "root");
    assert_eq!(row["target"], "leaver");
    assert_eq!(row["target_id"], gone.user_id.to_string());
    assert_eq!(row["before"]["username"], "leaver");

    // The name is free again; deleting twice is a 404.
    assert_eq!(
        app.register("leaver", "another-password").await.status(),
        201
    );
    let r = app
        .delete_as(&admin.access, &format!("/api/admin/users/{}", gone.user_id))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}

#[tokio::test]
async fn an_admin_cannot_delete_or_disable_themselves() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let me = format!("/api/admin/users/{}", admin.user_id);
    let r = app.delete_as(&admin.access, &me).send().await.unwrap();
    expect_error(r, 409, "self_change").await;
    // Alone, the admin hears that they are the last one; with another, that it is themselves.
    let disable_self = || {
        app.patch_as(&admin.access, &me)
            .json(&json!({"disabled": true}))
            .send()
    };
    expect_error(disable_self().await.unwrap(), 409, "last_admin").await;
    let r = app
        .post_as(&admin.access, &format!("{me}/password"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, 409, "self_change").await;
    assert_eq!(
        app.get_as(&admin.access, "/api/me")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    // Another admin may delete this one; the last one left stays.
    let second = app.signed_up("second").await;
    let r = app
        .patch_as(
            &admin.access,
            &format!("/api/admin/users/{}", second.user_id),
        )
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let second = app.session_for("second", "password-of-second").await;
    expect_error(disable_self().await.unwrap(), 409, "self_change").await;
    let r = app.delete_as(&second.access, &me).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        app.get_as(&admin.access, "/api/me")
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
}

#[tokio::test]
async fn an_admin_resets_a_password_and_every_session_of_it_ends() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("forgetful").await;
    let other_tab = app.session_for("forgetful", "password-of-forgetful").await;
    let path = format!("/api/admin/users/{}/password", user.user_id);

    let r = app
        .post_as(&admin.access, &path)
        .json(&json!({"password": "short"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_password").await;

    let r = app
        .post_as(&admin.access, &path)
        .json(&json!({"password": "chosen-by-admin-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["generated_password"], Value::Null);
    for s in [&user, &other_tab] {
        assert_eq!(
            app.get_as(&s.access, "/api/me")
                .send()
                .await
                .unwrap()
                .status(),
            401
        );
        let r = app
            .post_json("/api/auth/refresh", &json!({"refresh_token": s.refresh}))
            .await;
        assert_eq!(r.status(), 401);
    }
    assert_eq!(
        app.login("forgetful", "password-of-forgetful")
            .await
            .status(),
        401
    );
    assert_eq!(
        app.login("forgetful", "chosen-by-admin-1").await.status(),
        200
    );

    // Without a password the server makes one, shown once.
    let body: Value = app
        .post_as(&admin.access, &path)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let generated = body["generated_password"].as_str().unwrap();
    assert!(generated.len() >= 16, "{generated}");
    assert_eq!(
        app.login("forgetful", "chosen-by-admin-1").await.status(),
        401
    );
    assert_eq!(app.login("forgetful", generated).await.status(), 200);

    // Both resets are in the trail, without the passwords.
    let text = app
        .get_as(&admin.access, "/api/admin/changes?kind=user.password_reset")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let changes: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(changes["items"].as_array().unwrap().len(), 2, "{changes}");
    assert!(!text.contains("chosen-by-admin-1") && !text.contains(generated));

    // Accounts of the identity provider have no local password to reset.
    let mut db = app.db().await;
    diesel::sql_query("UPDATE users SET source = 'sso' WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(user.user_id)
        .execute(&mut db)
        .await
        .unwrap();
    let r = app
        .post_as(&admin.access, &path)
        .json(&json!({"password": "chosen-by-admin-2"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 409, "external_account").await;
    let r = app
        .post_as(
            &admin.access,
            &format!("/api/admin/users/{}/password", uuid::Uuid::new_v4()),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}
