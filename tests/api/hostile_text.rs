//! Hostile text on every route of `agentchat::routes::table::ROUTES` (issue 29, finding 13):
//! NUL characters (in the query string and in every string of a valid body), lone
//! surrogates and oversized values. Nothing answers 5xx; a NUL is refused with a 4xx that
//! names the field; nothing Postgres would refuse is stored.

use agentchat::routes::table::{Access, ROUTES};
use agentchat_tests::*;
use secrecy::SecretString;
use serde_json::{json, Value};

use crate::scim::{okta_user, TOKEN};

/// Every string (and key) of `v` with a NUL in its middle.
fn with_nul(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(format!("{s}\u{0}x")),
        Value::Array(a) => Value::Array(a.iter().map(with_nul).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), with_nul(v))).collect())
        }
        other => other.clone(),
    }
}

/// A body each route accepts (so the hostile one differs from it only by its text).
fn body_for(method: &str, path: &str) -> Option<Value> {
    Some(match (method, path) {
        ("GET" | "DELETE", _) => return None,
        (_, p) if p.contains("/messages") => json!({"content": "hello"}),
        ("PATCH", "/api/conversations/{id}") => json!({"title": "renamed"}),
        ("POST", "/api/conversations") => json!({"title": "new"}),
        ("POST", "/api/approvals/{id}") => json!({"decision": "approve", "note": "fine"}),
        ("PATCH", "/api/admin/users/{id}") => json!({"role": "member"}),
        ("POST", "/api/admin/users/{id}/password") => json!({"password": "password-of-someone"}),
        ("POST", "/api/admin/users") => {
            json!({"username": "created", "password": "password-of-created", "role": "member"})
        }
        ("PUT", "/api/admin/roles/{name}") => json!({"tools": ["calculator"]}),
        (_, p) if p.starts_with("/api/admin/tools/custom") => json!({
            "name": "mytool", "description": "a tool", "parameters": {"type": "object"},
            "method": "GET", "url_template": "https://example.com/x"}),
        (_, p) if p.starts_with("/api/admin/mcp-servers") => {
            json!({"name": "srv", "url": "http://127.0.0.1:9/mcp"})
        }
        ("POST", "/api/keys") => json!({"name": "key"}),
        ("POST", "/v1/chat/completions") => {
            json!({"model": "demo", "messages": [{"role": "user", "content": "hi"}]})
        }
        ("PATCH", "/api/me/preferences") => json!({"theme": "dark"}),
        ("POST", "/api/me/password") => {
            json!({"current_password": "password-of-root", "new_password": "new-password-1"})
        }
        ("POST", "/api/auth/register" | "/api/auth/login") => {
            json!({"username": "someone", "password": "password-of-someone"})
        }
        (_, p) if p.starts_with("/scim/v2/Users") => okta_user(),
        (_, p) if p.starts_with("/scim/v2/Groups") => json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "team"}),
        _ => json!({"name": "x"}),
    })
}

fn fill(path: &str, conversation: &str, user: uuid::Uuid) -> String {
    let id = if path.contains("/users/") || path.starts_with("/scim/") {
        user.to_string()
    } else {
        conversation.to_owned()
    };
    path.replace("{id}", &id)
        .replace("{turn_id}", conversation)
        .replace("{name}", "mytool")
        .replace("{path:.+}", "notes.txt")
        .replace("{path:.*}", "index.html")
}

#[tokio::test]
async fn every_route_answers_hostile_text_with_a_4xx_and_stores_none() {
    // On pgvector, so that the knowledge routes answer for real.
    let app = TestApp::builder()
        .on_pgvector()
        .settings(|s| {
            s.scim.token = Some(SecretString::from(TOKEN));
            s.telemetry.metrics_token = Some("scrape-secret".to_owned().into());
        })
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let conversation = app.new_conversation(&admin.access).await;
    let send = |method: &str, url: String, token: &str, body: Option<String>| {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = app.client.request(m, app.url(&url)).bearer_auth(token);
        if let Some(b) = body {
            let kind = if url.starts_with("/scim/") {
                "application/scim+json"
            } else {
                "application/json"
            };
            req = req.header("content-type", kind).body(b);
        }
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap_or_default())
        }
    };
    let mut refused_nul = 0;
    for route in ROUTES {
        let what = format!("{} {}", route.method, route.path);
        if route.path.starts_with("/api/auth/oidc") {
            continue; // not configured here: 404 before any input is read
        }
        let token = match route.access {
            Access::ScimToken => TOKEN,
            Access::MetricsToken => "scrape-secret",
            _ => admin.access.as_str(),
        };
        let url = fill(route.path, &conversation, admin.user_id);
        let query = "filter=userName%20eq%20%22a%00b%22&actor=a%00&kind=a%00&target=a%00\
                     &user=a%00&q=a%00&cursor=a%00&state=a%00";
        let joined = format!("{url}?{query}");
        let (s, text) = send(route.method, joined, token, None).await;
        assert_eq!(s, 400, "{what} with a NUL query: {text}");
        assert!(
            text.contains("NUL") && text.contains("filter"),
            "{what}: {text}"
        );
        refused_nul += 1;
        let Some(body) = body_for(route.method, route.path) else {
            continue;
        };
        let hostile = serde_json::to_string(&with_nul(&body)).unwrap();
        let (s, text) = send(route.method, url.clone(), token, Some(hostile)).await;
        assert!(s < 500, "{what} with NUL text: {s} {text}");
        // A lone surrogate is not Unicode: refused as malformed.
        let lone = r#"{"name": "\ud800", "content": "\udfff", "title": "\ud800"}"#.to_owned();
        let (s, text) = send(route.method, url.clone(), token, Some(lone)).await;
        assert!(s < 500, "{what} with a lone surrogate: {s} {text}");
        // Oversized: a value far past any field's bound, the body within the size limit.
        let mut big = body.clone();
        if let Some(m) = big.as_object_mut() {
            for v in m.values_mut() {
                if v.is_string() {
                    *v = Value::String("x".repeat(200_000));
                }
            }
        }
        let (s, text) = send(route.method, url, token, Some(big.to_string())).await;
        assert!(s < 500, "{what} with an oversized value: {s} {text}");
    }
    assert!(refused_nul >= 70, "only {refused_nul} routes checked");
    let mut db = app.db().await;
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let stored: Count = diesel::sql_query(
        "SELECT (SELECT count(*) FROM messages WHERE content LIKE '%' || chr(65533) || '%') \
              + (SELECT count(*) FROM conversations WHERE title LIKE '%' || chr(65533) || '%') \
              + (SELECT count(*) FROM custom_tools WHERE description LIKE '%' || chr(65533) || '%') \
              + (SELECT count(*) FROM users WHERE username LIKE '%' || chr(65533) || '%') AS n",
    )
    .get_result(&mut db)
    .await
    .unwrap();
    assert_eq!(stored.n, 0, "a NUL reached the database (as U+FFFD)");
}

/// A NUL written as the JSON escape inside a SCIM filter's string (`"\u0000"`, six
/// characters in the query, a NUL once decoded) is refused as `invalidValue`, not a 500.
#[tokio::test]
async fn an_escaped_nul_in_a_scim_filter_is_a_400() {
    let app = crate::scim::scim_app().await;
    for (path, filter) in [
        ("/scim/v2/Users", r#"userName eq "\u0000""#),
        ("/scim/v2/Users", r#"externalId eq "a\u0000b""#),
        ("/scim/v2/Groups", r#"displayName eq "\u0000""#),
    ] {
        let r = app
            .client
            .get(app.url(path))
            .query(&[("filter", filter)])
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 400, "{path} {filter}: {body}");
        assert_eq!(body["scimType"], "invalidValue", "{path} {filter}: {body}");
        assert!(body["detail"].as_str().unwrap().contains("NUL"), "{body}");
    }
}
