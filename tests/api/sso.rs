//! Single sign-on against a real OpenID provider (npm's certified `oidc-provider`, started
//! per test): first sign-in creates the account, later ones find it by (issuer, subject) and
//! re-map its role; tampered state, a wrong nonce, an expired ID token, a key rotation and
//! an unexpected issuer; password sign-in turned off; the last local admin kept.

use agentchat::config::{PasswordLogin, Settings};
use agentchat_tests::oidc::{Browser, OidcProvider, Step, CLIENT_ID, CLIENT_SECRET};
use agentchat_tests::*;
use serde_json::{json, Value};

const CALLBACK: &str = "/api/auth/oidc/callback";

pub(crate) async fn start_with(customise: impl FnOnce(&mut Settings)) -> (TestApp, OidcProvider) {
    start_on(TestApp::builder().settings(customise)).await
}

/// Starts the identity provider and `builder`'s server signing in through it.
pub(crate) async fn start_on(builder: AppBuilder<'_>) -> (TestApp, OidcProvider) {
    let idp = OidcProvider::start().await;
    let issuer = idp.issuer.clone();
    let app = builder
        .settings(|s| {
            s.oidc.issuer = Some(issuer);
            s.oidc.client_id = Some(CLIENT_ID.into());
            s.oidc.client_secret = Some(CLIENT_SECRET.into());
            s.oidc.role_map = vec!["admins=admin".into(), "staff=member".into()];
            s.oidc.display_name = "Test IdP".into();
        })
        .start()
        .await;
    idp.configure(&app.url(CALLBACK), 3600, 0).await;
    (app, idp)
}

/// The provider's redirect back to us, reached in a new browser.
async fn to_callback(app: &TestApp) -> (Browser, String) {
    let mut b = Browser::new();
    let callback = b
        .follow_until(&app.url("/api/auth/oidc/login"), &app.url(CALLBACK))
        .await
        .unwrap_or_else(|s| panic!("stopped at {} with {}: {}", s.url, s.status, s.body));
    (b, callback)
}

/// A whole sign-in in a new browser; the callback's answer.
pub(crate) async fn sign_in(app: &TestApp) -> (Browser, Step) {
    let (mut b, callback) = to_callback(app).await;
    let step = b.get(&callback).await;
    (b, step)
}

/// The access token the UI gets from the refresh cookie the callback set.
pub(crate) async fn access_token(app: &TestApp, b: &Browser) -> String {
    let cookie = b
        .cookie(&app.address, "agentchat_refresh")
        .expect("the callback set the refresh cookie");
    let r = app
        .client
        .post(app.url("/api/auth/refresh"))
        .header("cookie", format!("agentchat_refresh={cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn me(app: &TestApp, token: &str) -> reqwest::Response {
    app.get_as(token, "/api/me").send().await.unwrap()
}

/// An error page with `code`, and no session.
fn assert_refused(step: &Step, status: u16, code: &str) {
    assert_eq!(step.status, status, "{}", step.body);
    assert!(
        step.body.contains(&format!("data-code=\"{code}\"")),
        "expected {code}: {}",
        step.body
    );
    assert!(
        !step
            .set_cookies
            .iter()
            .any(|c| c.starts_with("agentchat_refresh=") && !c.starts_with("agentchat_refresh=;")),
        "a refused sign-in set a session cookie"
    );
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut db = app.db().await;
    diesel_async::RunQueryDsl::get_result::<N>(diesel::sql_query(sql), &mut db)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn first_sign_in_creates_the_account_and_later_ones_remap_its_role() {
    let (app, idp) = start_with(|_| {}).await;
    // A local account with the same name and e-mail: never matched by either.
    let local = app.signed_up("alice").await;
    idp.account("sub-alice", "alice", &["staff"]).await;

    let (b, step) = sign_in(&app).await;
    assert_eq!(step.status, 303, "{}", step.body);
    assert_eq!(step.location.as_deref(), Some(app.url("/").as_str()));
    assert!(
        b.cookie(&app.address, "agentchat_oidc").is_none(),
        "the login state cookie is spent"
    );
    let first = access_token(&app, &b).await;
    let who: Value = me(&app, &first).await.json().await.unwrap();
    assert_eq!(who["role"], "member");
    assert_ne!(who["id"], local.user_id.to_string());
    assert_eq!(who["username"], "alice-2");
    assert_eq!(
        count(&app, "SELECT count(*) AS n FROM users WHERE source = 'sso'").await,
        1
    );

    // Other groups at the provider: same account, new role, old access tokens end.
    idp.account("sub-alice", "alice", &["other", "admins"])
        .await;
    let (b2, step) = sign_in(&app).await;
    assert_eq!(step.status, 303, "{}", step.body);
    let second = access_token(&app, &b2).await;
    let who2: Value = me(&app, &second).await.json().await.unwrap();
    assert_eq!(who2["id"], who["id"]);
    assert_eq!(who2["role"], "admin");
    expect_error(me(&app, &first).await, 401, "unauthenticated").await;
    assert_eq!(
        count(&app, "SELECT count(*) AS n FROM user_identities").await,
        1
    );

    // The admin users view says where each account comes from.
    let users: Value = app
        .get_as(&second, "/api/admin/users")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sources: Vec<(String, String)> = users["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["username"].as_str().unwrap().to_owned(),
                u["source"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("alice".into(), "password".into()),
            ("alice-2".into(), "sso".into())
        ]
    );

    // An SSO account cannot be given a local password.
    let r = app
        .post_as(&second, "/api/me/password")
        .json(
            &json!({"current_password": "anything-at-all", "new_password": "a new local password"}),
        )
        .send()
        .await
        .unwrap();
    expect_error(r, 409, "external_account").await;
}

#[tokio::test]
async fn a_tampered_or_foreign_state_is_refused() {
    let (app, idp) = start_with(|_| {}).await;
    idp.account("sub-bob", "bob", &["staff"]).await;

    let (mut b, callback) = to_callback(&app).await;
    let mut url = url::Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" {
                format!("{v}x")
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    assert_refused(&b.get(url.as_str()).await, 400, "invalid_state");

    // The untouched callback in another browser (no login-state cookie): refused too.
    let (_, callback) = to_callback(&app).await;
    assert_refused(&Browser::new().get(&callback).await, 400, "invalid_state");
    assert_eq!(count(&app, "SELECT count(*) AS n FROM users").await, 0);
}

#[tokio::test]
async fn a_wrong_nonce_is_refused() {
    let (app, idp) = start_with(|_| {}).await;
    idp.account("sub-carol", "carol", &["staff"]).await;
    let mut b = Browser::new();
    let login = b.get(&app.url("/api/auth/oidc/login")).await;
    assert_eq!(login.status, 302);
    let state_cookie = login
        .set_cookies
        .iter()
        .find(|c| c.starts_with("agentchat_oidc="))
        .expect("the login state cookie");
    for attr in [
        "HttpOnly",
        "SameSite=Lax",
        "Path=/api/auth/oidc",
        "Max-Age=600",
    ] {
        assert!(state_cookie.contains(attr), "{state_cookie} lacks {attr}");
    }
    let mut auth = url::Url::parse(login.location.as_deref().unwrap()).unwrap();
    assert!(auth
        .query_pairs()
        .any(|(k, v)| k == "code_challenge_method" && v == "S256"));
    let pairs: Vec<(String, String)> = auth
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "nonce" {
                "someone-elses-nonce".to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    auth.query_pairs_mut().clear().extend_pairs(pairs);
    let callback = b
        .follow_until(auth.as_str(), &app.url(CALLBACK))
        .await
        .unwrap_or_else(|s| panic!("{}: {}", s.status, s.body));
    assert_refused(&b.get(&callback).await, 401, "invalid_id_token");
    assert_eq!(count(&app, "SELECT count(*) AS n FROM users").await, 0);
}

#[tokio::test]
async fn an_expired_id_token_is_refused() {
    let (app, idp) = start_with(|_| {}).await;
    idp.account("sub-dave", "dave", &["staff"]).await;
    // One second of life, delivered after two.
    idp.configure(&app.url(CALLBACK), 1, 2000).await;
    let (_, step) = sign_in(&app).await;
    assert_refused(&step, 401, "invalid_id_token");
    // The same flow with a fresh token signs in: the refusal was the expiry.
    idp.configure(&app.url(CALLBACK), 3600, 0).await;
    let (_, step) = sign_in(&app).await;
    assert_eq!(step.status, 303, "{}", step.body);
}

#[tokio::test]
async fn a_key_rotation_at_the_provider_is_followed() {
    let (app, idp) = start_with(|s| s.oidc.jwks_min_refetch = std::time::Duration::ZERO).await;
    idp.account("sub-erin", "erin", &["staff"]).await;
    assert_eq!(sign_in(&app).await.1.status, 303);
    idp.rotate_keys().await;
    let (_, step) = sign_in(&app).await;
    assert_eq!(step.status, 303, "after a rotation: {}", step.body);

    // Refetching is rate-limited: with a long interval the new key is not fetched yet.
    let (slow, idp2) =
        start_with(|s| s.oidc.jwks_min_refetch = std::time::Duration::from_secs(3600)).await;
    idp2.account("sub-erin", "erin", &["staff"]).await;
    assert_eq!(sign_in(&slow).await.1.status, 303);
    idp2.rotate_keys().await;
    assert_refused(&sign_in(&slow).await.1, 401, "invalid_id_token");
}

#[tokio::test]
async fn a_provider_naming_another_issuer_is_refused() {
    // The provider's discovery says http://127.0.0.1:…; we are configured for localhost.
    let idp = OidcProvider::start().await;
    let other = idp.issuer.replace("127.0.0.1", "localhost");
    let app = TestApp::builder()
        .settings(|s| {
            s.oidc.issuer = Some(other);
            s.oidc.client_id = Some(CLIENT_ID.into());
            s.oidc.client_secret = Some(CLIENT_SECRET.into());
        })
        .start()
        .await;
    idp.configure(&app.url(CALLBACK), 3600, 0).await;
    let step = Browser::new().get(&app.url("/api/auth/oidc/login")).await;
    assert_refused(&step, 502, "provider_unavailable");
    assert!(step.location.is_none());
}

#[tokio::test]
async fn denied_consent_and_unmapped_groups_end_on_a_page_that_says_so() {
    let (app, idp) = start_with(|s| s.oidc.require_group = true).await;
    idp.deny_next("sub-frank").await;
    assert_refused(&sign_in(&app).await.1, 403, "access_denied");

    idp.account("sub-frank", "frank", &["contractors"]).await;
    let (_, step) = sign_in(&app).await;
    assert_refused(&step, 403, "no_matching_group");
    assert!(step.body.contains("not in a group"));
    assert_eq!(count(&app, "SELECT count(*) AS n FROM users").await, 0);
}

#[tokio::test]
async fn password_sign_in_can_be_turned_off() {
    let (app, idp) = start_with(|s| s.oidc.password_login = PasswordLogin::Disabled).await;
    let providers: Value = app
        .client
        .get(app.url("/api/auth/providers"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        providers,
        json!({"password": false, "registration": false,
               "sso": [{"id": "oidc", "name": "Test IdP", "login_url": "/api/auth/oidc/login"}]})
    );
    expect_error(
        app.register("mallory", "password-of-mallory").await,
        403,
        "password_login_disabled",
    )
    .await;
    expect_error(
        app.login("mallory", "password-of-mallory").await,
        403,
        "password_login_disabled",
    )
    .await;
    idp.account("sub-gina", "gina", &["staff"]).await;
    assert_eq!(sign_in(&app).await.1.status, 303);

    // Without single sign-on configured, the setting is refused at start.
    let mut s = test_settings("postgres://unused/x");
    s.oidc.password_login = PasswordLogin::Disabled;
    assert!(s.validate().is_err());
}

#[tokio::test]
async fn the_last_local_admin_stays_while_single_sign_on_is_on() {
    let (app, idp) = start_with(|_| {}).await;
    let local = app.signed_up("root").await;
    idp.account("sub-helen", "helen", &["admins"]).await;
    let (b, _) = sign_in(&app).await;
    let sso_admin = access_token(&app, &b).await;
    for body in [json!({"disabled": true}), json!({"role": "member"})] {
        let r = app
            .patch_as(&sso_admin, &format!("/api/admin/users/{}", local.user_id))
            .json(&body)
            .send()
            .await
            .unwrap();
        expect_error(r, 409, "last_local_admin").await;
    }
    // A second local admin may then be demoted.
    let second = app.signed_up("root2").await;
    let r = app
        .patch_as(&sso_admin, &format!("/api/admin/users/{}", second.user_id))
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app
        .patch_as(&sso_admin, &format!("/api/admin/users/{}", local.user_id))
        .json(&json!({"role": "member"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
