//! SCIM 2.0 provisioning with the requests Entra ID documents (create, filter, PATCH with
//! Entra's string booleans, groups and members, deprovisioning), the bearer token, and local
//! accounts out of reach. Okta's requests are in `scim_okta.rs`.

use agentchat_tests::*;
use secrecy::SecretString;
use serde_json::{json, Value};

pub(crate) const TOKEN: &str = "scim-test-token-0123456789-abcdefghijklmnop";

pub(crate) fn scim(app: &TestApp, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    app.client
        .request(method, app.url(path))
        .bearer_auth(TOKEN)
        .header("content-type", "application/scim+json")
}

pub(crate) async fn send(req: reqwest::RequestBuilder, body: Option<Value>, status: u16) -> Value {
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

pub(crate) async fn scim_app() -> TestApp {
    TestApp::builder()
        .settings(|s| s.scim.token = Some(SecretString::from(TOKEN)))
        .start()
        .await
}

pub(crate) fn okta_user() -> Value {
    // Okta's SCIM 2.0 reference: "Create the User".
    json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "test.user@okta.local",
        "name": {"givenName": "Test", "familyName": "User"},
        "emails": [{"primary": true, "value": "test.user@okta.local", "type": "work"}],
        "displayName": "Test User", "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7", "groups": [], "password": "1mz050nq", "active": true})
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
    let plain = TestApp::builder().start().await;
    let r = plain
        .client
        .get(plain.url("/scim/v2/Users"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
