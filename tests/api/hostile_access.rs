//! Hostile input: the access-control matrix, generated from the server's own route table
//! (`agentchat::routes::table::ROUTES`): every route × method, called by another member
//! with the victim's object ids, by nobody, and by a member on admin routes, answers
//! 401/403/404 and changes no row. Also mass assignment in self-service bodies.

use agentchat::routes::table::{Access, ROUTES};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

/// The routes the `configure` functions register, counted in their source: the table must
/// list exactly as many (a new route without a table entry fails here).
#[test]
fn the_route_table_lists_every_registered_route() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src/routes");
    let mut registered = 0;
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                registered += ["get", "post", "put", "patch", "delete"]
                    .iter()
                    .map(|m| text.matches(&format!("web::{m}()")).count())
                    .sum::<usize>();
            }
        }
    }
    assert_eq!(
        registered,
        ROUTES.len(),
        "a route was added or removed: update agentchat::routes::table::ROUTES"
    );
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct Counts {
    #[diesel(sql_type = diesel::sql_types::Text)]
    snapshot: String,
}

/// Every row that matters, as text: any change made by a refused request shows.
async fn snapshot(app: &TestApp) -> String {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT concat_ws('|', \
           (SELECT string_agg(concat_ws(',', id, username, role, disabled, token_budget, token_version, password_hash, theme, default_model), ';' ORDER BY id) FROM users), \
           (SELECT string_agg(concat_ws(',', id, user_id, title, model, updated_at, system_prompt), ';' ORDER BY id) FROM conversations), \
           (SELECT count(*) FROM messages), \
           (SELECT string_agg(concat_ws(',', name, tools::text), ';' ORDER BY name) FROM roles), \
           (SELECT string_agg(concat_ws(',', name, url_template, headers::text), ';' ORDER BY name) FROM custom_tools), \
           (SELECT count(*) FROM refresh_tokens WHERE revoked_at IS NULL), \
           (SELECT string_agg(concat_ws(',', id, user_id, name, expires_at), ';' ORDER BY id) FROM api_keys), \
           (SELECT string_agg(concat_ws(',', id, scope, redact_tools, expires_at, revoked_at), ';' ORDER BY id) FROM conversation_shares), \
           (SELECT count(*) FROM share_views) \
         ) AS snapshot",
    )
    .get_result::<Counts>(&mut db)
    .await
    .unwrap()
    .snapshot
}

/// A body that passes validation for `method path`, so a refusal is about who asks.
fn body_for(method: &str, path: &str) -> Option<Value> {
    Some(match (method, path) {
        ("GET" | "DELETE", _) => return None,
        (_, p) if p.contains("/messages") => json!({"content": "hello"}),
        ("PATCH", "/api/conversations/{id}") => json!({"title": "pwned"}),
        ("POST", "/api/conversations/{id}/truncate") => {
            json!({"from": "00000000-0000-4000-8000-000000000000"})
        }
        ("POST", "/api/conversations") => json!({}),
        ("POST", "/api/collections") => json!({"name": "intruder"}),
        ("PATCH", "/api/collections/{id}") => json!({"name": "pwned"}),
        ("POST", "/api/collections/{id}/files") => json!({"workspace_path": "notes.txt"}),
        ("PUT", "/api/collections/{id}/grants") => json!({"roles": ["member"]}),
        ("PUT", "/api/conversations/{id}/collections") => json!({"collections": []}),
        ("POST", "/api/approvals/{id}") => json!({"decision": "approve"}),
        ("PATCH", "/api/admin/users/{id}") => json!({"role": "admin", "disabled": true}),
        ("POST", "/api/admin/users/{id}/password") => json!({"password": "password-of-intruder"}),
        ("POST", "/api/admin/users") => {
            json!({"username": "intruder", "password": "password-of-intruder", "role": "admin"})
        }
        ("PUT", "/api/admin/roles/{name}") => json!({"tools": ["http_get"]}),
        (_, p) if p.starts_with("/api/admin/tools/custom") => json!({
            "name": "victimtool", "description": "x", "parameters": {"type": "object"},
            "method": "GET", "url_template": "https://example.com/x"}),
        (_, p) if p.starts_with("/api/admin/providers") => {
            json!({"name": "intruder", "kind": "openai", "base_url": "http://127.0.0.1:9/v1"})
        }
        (_, p) if p.starts_with("/api/admin/search-providers") => {
            json!({"name": "intruder", "kind": "searxng", "base_url": "http://127.0.0.1:9"})
        }
        ("PUT", "/api/admin/roles/{name}/sandbox") => json!({"timeout_secs": 1}),
        (_, p) if p.starts_with("/api/admin/models") => {
            json!({"name": "intruder", "provider": "default"})
        }
        (_, p) if p.starts_with("/api/admin/mcp-servers") => {
            json!({"name": "intruder", "url": "http://127.0.0.1:9/mcp"})
        }
        ("POST", "/api/keys") => json!({"name": "intruder"}),
        ("POST", "/v1/chat/completions") => {
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        }
        ("PATCH", "/api/me/preferences") => json!({"theme": "dark"}),
        ("POST", "/api/conversations/{id}/shares") => json!({"scope": "org"}),
        ("PATCH", "/api/shares/{id}") => json!({"redact_tools": false, "expires_at": null}),
        (_, p) if p.ends_with("/fork") => {
            json!({"at_message_id": "00000000-0000-4000-8000-000000000000"})
        }
        (_, p) if p.starts_with("/api/admin/assistants") => {
            json!({"name": "intruder", "instructions": "obey", "tools": ["http_get"]})
        }
        ("PUT", "/api/me/memory/settings") => json!({"enabled": false}),
        (_, p) if p.starts_with("/api/me/memory") => json!({"text": "pwned"}),
        ("POST", "/api/me/password") => {
            json!({"current_password": "password-of-victim", "new_password": "new-password-1"})
        }
        _ => json!({}),
    })
}

/// `path` with the victim's ids in its placeholders.
fn fill(path: &str, conversation: &str, victim: uuid::Uuid) -> String {
    path.replace(
        "{id}",
        if path.contains("/users/") {
            ""
        } else {
            conversation
        },
    )
    .replace("/users/", &format!("/users/{victim}"))
    .replace("{name}", "victimtool")
    .replace("{path:.+}", "secret/plans.txt")
    .replace("{path:.*}", "index.html")
}

async fn call(
    app: &TestApp,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = app.client.request(m, app.url(url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

#[tokio::test]
async fn every_route_refuses_other_users_objects_and_changes_nothing() {
    // On pgvector, so that the knowledge routes answer for real.
    let app = TestApp::builder().on_pgvector().start().await;
    let admin = app.signed_up("root").await;
    let victim = app.signed_up("victim").await;
    let thief = app.signed_up("thief").await;
    let conversation = app.new_conversation(&victim.access).await;
    let events = app
        .chat(&victim.access, &conversation, "my secret plans")
        .await;
    assert_eq!(events.last().unwrap().event, "done");
    let turn = events[0].data["message_id"].as_str().unwrap().to_owned();
    let r = app
        .client
        .put(app.url("/api/files/secret/plans.txt"))
        .bearer_auth(&victim.access)
        .body("victim's plans")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let tool = body_for("POST", "/api/admin/tools/custom").unwrap();
    let (status, _) = call(
        &app,
        "POST",
        "/api/admin/tools/custom",
        Some(&admin.access),
        Some(tool),
    )
    .await;
    assert_eq!(status, 201);
    // A link of the victim's: the owner's routes of `/api/shares/{id}` get its id.
    let r = app
        .post_as(
            &victim.access,
            &format!("/api/conversations/{conversation}/shares"),
        )
        .json(&json!({"scope": "org"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let share: Value = r.json().await.unwrap();
    let share = format!("/api/shares/{}", share["id"].as_str().unwrap());

    let before = snapshot(&app).await;
    let mut checked = 0;
    for route in ROUTES {
        let path = route.path.replace("/api/shares/{id}", &share);
        let url = fill(&path, &conversation, victim.user_id).replace("{turn_id}", &turn);
        let body = body_for(route.method, route.path);
        let what = format!("{} {}", route.method, route.path);
        match route.access {
            Access::Public | Access::MetricsToken | Access::ScimToken => continue,
            Access::Admin => {
                let (s, _) = call(&app, route.method, &url, None, body.clone()).await;
                assert_eq!(s, 401, "{what} without a token");
                let (s, text) = call(&app, route.method, &url, Some(&thief.access), body).await;
                assert_eq!(s, 403, "{what} as a member: {text}");
            }
            Access::User => {
                let (s, _) = call(&app, route.method, &url, None, body.clone()).await;
                assert_eq!(s, 401, "{what} without a token");
                let owned = route.path.contains('{');
                if route.path == "/api/shares/{id}/fork" {
                    // Any member may read (so copy) an org link: that is what it is for
                    // (shares.rs covers who may and may not).
                    continue;
                } else if route.path == "/api/me/password" {
                    // The thief's own password is not the victim's: refused, nothing changes.
                    let (s, _) = call(&app, route.method, &url, Some(&thief.access), body).await;
                    assert_eq!(s, 403, "{what}");
                } else if owned && route.method != "PUT" {
                    let (s, text) = call(&app, route.method, &url, Some(&thief.access), body).await;
                    assert_eq!(s, 404, "{what} with the victim's id: {text}");
                    assert!(!text.contains("plans"), "{what} leaked: {text}");
                } else if !owned && route.method == "GET" {
                    let (s, text) = call(&app, route.method, &url, Some(&thief.access), body).await;
                    assert_eq!(s, 200, "{what}");
                    assert!(
                        !text.contains(&conversation) && !text.contains("plans"),
                        "{what} leaked: {text}"
                    );
                } else {
                    // Creating one's own objects (a conversation, a file of the same name)
                    // is allowed; the snapshot below shows it touched nothing of the victim.
                    continue;
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} routes checked");
    assert_eq!(
        snapshot(&app).await,
        before,
        "a refused request changed a row"
    );
    // The victim's things are intact.
    let got = app
        .get_as(&victim.access, "/api/files/secret/plans.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(got.text().await.unwrap(), "victim's plans");
    let stored = app.conversation(&victim.access, &conversation).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 2, "{stored}");
}

#[tokio::test]
async fn self_service_bodies_cannot_assign_privileged_fields() {
    let app = TestApp::builder().start().await;
    let _admin = app.signed_up("first").await;
    let before = snapshot(&app).await;
    for extra in [
        json!({"role": "admin"}),
        json!({"token_budget": 999_999_999}),
        json!({"disabled": false}),
        json!({"id": uuid::Uuid::new_v4()}),
        json!({"token_version": 7}),
    ] {
        let mut body = json!({"username": "climber", "password": "password-of-climber"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let r = app.post_json("/api/auth/register", &body).await;
        expect_error(r, 400, "invalid_json").await;
    }
    assert_eq!(snapshot(&app).await, before);
    let s = app.signed_up("climber").await;
    let conv = app.new_conversation(&s.access).await;
    let before = snapshot(&app).await;
    for (method, path, body) in [
        (
            "POST",
            "/api/conversations".to_owned(),
            json!({"user_id": uuid::Uuid::new_v4()}),
        ),
        (
            "PATCH",
            format!("/api/conversations/{conv}"),
            json!({"title": "t", "user_id": uuid::Uuid::new_v4()}),
        ),
        (
            "POST",
            format!("/api/conversations/{conv}/messages"),
            json!({"content": "hi", "role": "system"}),
        ),
        (
            "POST",
            "/api/me/password".to_owned(),
            json!({"current_password": "password-of-climber", "new_password": "new-password-1", "role": "admin"}),
        ),
        (
            "POST",
            "/api/auth/login".to_owned(),
            json!({"username": "climber", "password": "password-of-climber", "role": "admin"}),
        ),
    ] {
        let (status, text) = call(&app, method, &path, Some(&s.access), Some(body)).await;
        assert_eq!(status, 400, "{method} {path}: {text}");
    }
    assert_eq!(snapshot(&app).await, before);
    let me: Value = app
        .get_as(&s.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["role"], "member");
}
