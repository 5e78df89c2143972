//! SCIM 2.0 provisioning with the requests Entra ID and Okta document: create, filter,
//! deactivate (sessions, access tokens and running turns end at once), groups and their
//! members, deprovisioning; the bearer token; local accounts out of reach.

use std::time::Duration;

use agentchat::config::ProviderKind;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use secrecy::SecretString;
use serde_json::{json, Value};

use super::sso::{access_token, sign_in, start_with};

const TOKEN: &str = "scim-test-token-0123456789-abcdefghijklmnop";

fn scim(app: &TestApp, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    app.client
        .request(method, app.url(path))
        .bearer_auth(TOKEN)
        .header("content-type", "application/scim+json")
}

async fn send(req: reqwest::RequestBuilder, body: Option<Value>, status: u16) -> Value {
    let req = match body {
        Some(b) => req.body(b.to_string()),
        None => req,
    };
    let r = req.send().await.unwrap();
    let got = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn scim_app() -> TestApp {
    spawn_app_with(|s| s.scim.token = Some(SecretString::from(TOKEN))).await
}

fn okta_user() -> Value {
    // Okta's SCIM 2.0 reference: "Create the User".
    json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "test.user@okta.local",
        "name": {"givenName": "Test", "familyName": "User"},
        "emails": [{"primary": true, "value": "test.user@okta.local", "type": "work"}],
        "displayName": "Test User", "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7", "groups": [], "password": "1mz050nq", "active": true})
}

#[tokio::test]
async fn okta_provisions_the_account_sso_links_it_and_deactivation_ends_everything() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("words words words").hang()));
    let base = fake.base_url_openai();
    let (app, idp) = start_with(|s| {
        s.scim.token = Some(SecretString::from(TOKEN));
        s.llm.provider = ProviderKind::Openai;
        s.llm.base_url = base;
        s.llm.max_retries = 0;
    })
    .await;
    let created = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Users"),
        Some(okta_user()),
        201,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["schemas"],
        json!(["urn:ietf:params:scim:schemas:core:2.0:User"])
    );
    assert_eq!(created["active"], true);
    assert_eq!(created["meta"]["resourceType"], "User");
    // Okta's password is never used: the account signs in only through the provider.
    expect_error(
        app.login("test.user", "1mz050nq").await,
        401,
        "unauthenticated",
    )
    .await;

    // Okta looks the user up before changing them.
    let found = send(
        scim(&app, reqwest::Method::GET, "/scim/v2/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100"),
        None,
        200,
    )
    .await;
    assert_eq!(
        found["schemas"],
        json!(["urn:ietf:params:scim:api:messages:2.0:ListResponse"])
    );
    assert_eq!(
        (found["totalResults"].as_i64(), found["startIndex"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(found["Resources"][0]["id"], id);

    // Okta's user id is the ID token's `sub`: the first sign-in lands on this account.
    idp.account("00ujl29u0le5T6Aj10h7", "test.user", &["staff"])
        .await;
    let (browser, step) = sign_in(&app).await;
    assert_eq!(step.status, 303, "{}", step.body);
    let token = access_token(&app, &browser).await;
    let who: Value = app
        .get_as(&token, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(who["id"], id);

    // A turn is running when Okta deactivates the user.
    let conv = app.new_conversation(&token).await;
    let (client, url, t) = (
        app.client.clone(),
        app.url(&format!("/api/conversations/{conv}/messages")),
        token.clone(),
    );
    let turn = tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(t)
            .json(&json!({"content": "talk"}))
            .send()
            .await
            .unwrap();
        parse_sse(&r.text().await.unwrap())
    });
    for _ in 0..100 {
        if fake.request_count() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let deactivate = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": false}}]});
    let patched = send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Users/{id}"),
        ),
        Some(deactivate),
        200,
    )
    .await;
    assert_eq!(patched["active"], false);
    let events = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .expect("the deactivated user's turn stopped")
        .unwrap();
    assert_eq!(events.last().unwrap().data["finish_reason"], "cancelled");
    expect_error(
        app.get_as(&token, "/api/me").send().await.unwrap(),
        401,
        "unauthenticated",
    )
    .await;
    let refresh = browser.cookie(&app.address, "agentchat_refresh").unwrap();
    let r = app
        .client
        .post(app.url("/api/auth/refresh"))
        .header("cookie", format!("agentchat_refresh={refresh}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Signing in again at the provider does not get back in.
    let (_, step) = sign_in(&app).await;
    assert_eq!(step.status, 403, "{}", step.body);
    assert!(step.body.contains("account_disabled"));
}

#[tokio::test]
async fn entra_id_provisions_users_and_groups() {
    let app = scim_app().await;
    // Entra ID's SCIM reference requests.
    let user = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User",
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
        "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
        "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
        "active": true,
        "emails": [{"primary": true, "type": "work", "value": "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com"}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
        "roles": []});
    let created = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Users"),
        Some(user.clone()),
        201,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["name"],
        json!({"givenName": "givenName", "familyName": "familyName"})
    );
    let dup = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Users"),
        Some(user),
        409,
    )
    .await;
    assert_eq!(
        dup["schemas"],
        json!(["urn:ietf:params:scim:api:messages:2.0:Error"])
    );
    assert_eq!(
        (dup["status"].as_str(), dup["scimType"].as_str()),
        (Some("409"), Some("uniqueness"))
    );

    let by_external = send(
        scim(
            &app,
            reqwest::Method::GET,
            "/scim/v2/Users?filter=externalId%20eq%20%220a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef%22",
        ),
        None,
        200,
    )
    .await;
    assert_eq!(by_external["Resources"][0]["id"], id);
    let none = send(
        scim(
            &app,
            reqwest::Method::GET,
            "/scim/v2/Users?filter=userName%20eq%20%22nobody%22",
        ),
        None,
        200,
    )
    .await;
    assert_eq!(
        (
            none["totalResults"].as_i64(),
            none["Resources"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );

    let update = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [
            {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "updatedEmail@microsoft.com"},
            {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"}]});
    let patched = send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Users/{id}"),
        ),
        Some(update),
        200,
    )
    .await;
    assert_eq!(patched["emails"][0]["value"], "updatedEmail@microsoft.com");
    assert_eq!(patched["name"]["familyName"], "updatedFamilyName");
    // Entra ID's boolean as a string.
    let disable = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "Replace", "path": "active", "value": "False"}]});
    let patched = send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Users/{id}"),
        ),
        Some(disable),
        200,
    )
    .await;
    assert_eq!(patched["active"], false);

    let group = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group",
            "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
        "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159", "displayName": "displayName",
        "meta": {"resourceType": "Group"}});
    let g = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Groups"),
        Some(group),
        201,
    )
    .await;
    let gid = g["id"].as_str().unwrap().to_owned();
    assert_eq!(g["members"], json!([]));
    let add = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"name": "addMember", "op": "Add", "path": "members", "value": [{"$ref": null, "value": id}]}]});
    send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        Some(add),
        204,
    )
    .await;
    let got = send(
        scim(
            &app,
            reqwest::Method::GET,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        200,
    )
    .await;
    assert_eq!(got["members"][0]["value"], id);
    let user_now = send(
        scim(&app, reqwest::Method::GET, &format!("/scim/v2/Users/{id}")),
        None,
        200,
    )
    .await;
    assert_eq!(user_now["groups"][0]["display"], "displayName");
    let listed = send(
        scim(&app, reqwest::Method::GET, "/scim/v2/Groups?excludedAttributes=members&filter=displayName%20eq%20%22displayName%22"),
        None,
        200,
    )
    .await;
    assert_eq!(listed["totalResults"], 1);
    assert!(listed["Resources"][0].get("members").is_none());
    let remove = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"name": "removeMember", "op": "Remove", "path": "members", "value": [{"$ref": null, "value": id}]}]});
    send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        Some(remove),
        204,
    )
    .await;
    let got = send(
        scim(
            &app,
            reqwest::Method::GET,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        200,
    )
    .await;
    assert_eq!(got["members"], json!([]));

    // Deprovisioning: gone from SCIM, the account kept disabled.
    send(
        scim(
            &app,
            reqwest::Method::DELETE,
            &format!("/scim/v2/Users/{id}"),
        ),
        None,
        204,
    )
    .await;
    send(
        scim(&app, reqwest::Method::GET, &format!("/scim/v2/Users/{id}")),
        None,
        404,
    )
    .await;
    send(
        scim(
            &app,
            reqwest::Method::DELETE,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        204,
    )
    .await;
    send(
        scim(
            &app,
            reqwest::Method::GET,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        404,
    )
    .await;
}

#[tokio::test]
async fn okta_group_push_renames_and_moves_members() {
    let app = scim_app().await;
    let a = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Users"),
        Some(okta_user()),
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let g = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Groups"),
        Some(json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Test SCIMv2", "members": []})),
        201,
    )
    .await;
    let gid = g["id"].as_str().unwrap().to_owned();
    let ops = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [
            {"op": "replace", "value": {"id": gid, "displayName": "Test SCIMv2 renamed"}},
            {"op": "add", "path": "members", "value": [{"value": a, "display": "test.user@okta.local"}]}]});
    send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        Some(ops),
        204,
    )
    .await;
    let got = send(
        scim(
            &app,
            reqwest::Method::GET,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        200,
    )
    .await;
    assert_eq!(got["displayName"], "Test SCIMv2 renamed");
    assert_eq!(got["members"][0]["display"], "test.user@okta.local");
    let ops = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "remove", "path": format!("members[value eq \"{a}\"]")}]});
    send(
        scim(
            &app,
            reqwest::Method::PATCH,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        Some(ops),
        204,
    )
    .await;
    let got = send(
        scim(
            &app,
            reqwest::Method::GET,
            &format!("/scim/v2/Groups/{gid}"),
        ),
        None,
        200,
    )
    .await;
    assert_eq!(got["members"], json!([]));
    // Okta's reactivation: PUT with active true.
    let mut put = okta_user();
    put["active"] = json!(false);
    let u = send(
        scim(&app, reqwest::Method::PUT, &format!("/scim/v2/Users/{a}")),
        Some(put.clone()),
        200,
    )
    .await;
    assert_eq!(u["active"], false);
    put["active"] = json!(true);
    let u = send(
        scim(&app, reqwest::Method::PUT, &format!("/scim/v2/Users/{a}")),
        Some(put),
        200,
    )
    .await;
    assert_eq!(u["active"], true);
}

#[tokio::test]
async fn scim_needs_its_token_and_never_touches_local_accounts() {
    let app = scim_app().await;
    let local = app.signed_up("localadmin").await;
    for auth in [None, Some("wrong-token"), Some(&TOKEN[..TOKEN.len() - 1])] {
        let mut req = app.client.get(app.url("/scim/v2/Users"));
        if let Some(t) = auth {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/scim+json"));
        let body: Value = r.json().await.unwrap();
        assert_eq!(
            body["schemas"],
            json!(["urn:ietf:params:scim:api:messages:2.0:Error"])
        );
        assert_eq!(body["status"], "401");
    }
    let all = send(
        scim(&app, reqwest::Method::GET, "/scim/v2/Users"),
        None,
        200,
    )
    .await;
    assert_eq!(all["totalResults"], 0);
    let path = format!("/scim/v2/Users/{}", local.user_id);
    send(scim(&app, reqwest::Method::GET, &path), None, 404).await;
    let off = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "active", "value": false}]});
    send(scim(&app, reqwest::Method::PATCH, &path), Some(off), 404).await;
    send(scim(&app, reqwest::Method::DELETE, &path), None, 404).await;
    let me = app.get_as(&local.access, "/api/me").send().await.unwrap();
    assert_eq!(me.status(), 200);
    let bad = send(
        scim(
            &app,
            reqwest::Method::GET,
            "/scim/v2/Users?filter=title%20sw%20%22x%22",
        ),
        None,
        400,
    )
    .await;
    assert_eq!(bad["scimType"], "invalidFilter");
    let bad = send(
        scim(&app, reqwest::Method::POST, "/scim/v2/Users"),
        Some(json!({"userName": 5})),
        400,
    )
    .await;
    assert_eq!(bad["scimType"], "invalidSyntax");

    // SCIM off: the routes are not there.
    let plain = spawn_app().await;
    let r = plain
        .client
        .get(plain.url("/scim/v2/Users"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
