//! SCIM 2.0 provisioning with the requests Okta documents: the account it creates is linked
//! to its first single sign-on, deactivation ends sessions, access tokens and running turns
//! at once; group push renames and moves members.

use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use secrecy::SecretString;
use serde_json::{json, Value};

use super::scim::{okta_user, scim, scim_app, send, TOKEN};
use super::sso::{access_token, sign_in, start_on};
#[tokio::test]
async fn okta_provisions_the_account_sso_links_it_and_deactivation_ends_everything() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("words words words").hang()));
    let (app, idp) = start_on(
        TestApp::builder()
            .openai(&fake)
            .settings(|s| s.scim.token = Some(SecretString::from(TOKEN))),
    )
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
