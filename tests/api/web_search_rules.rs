//! Web search governance through the running server: a role's site lists applied to results
//! and to `http_get` fetches (a domain covers its subdomains, deny wins), queries per user
//! per day, and the price per query charged to the money budget, held before the provider
//! is called and settled after, never past the budget.

use agentchat_tests::fake_search::{found, Answer, FakeSearch, Vendor};
use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::web_search::{app_with_search, rust_results, search_turn};

async fn put_rules(app: &TestApp, admin: &str, role: &str, rules: Value) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/api/admin/roles/{role}/search")))
        .bearer_auth(admin)
        .json(&rules)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_roles_site_lists_filter_results_and_refuse_fetches() {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(
        Vendor::Searxng,
        "",
        Answer::Results(vec![
            found("a", "https://example.com/a", "apex"),
            found("b", "https://docs.example.com/b", "a subdomain"),
            found("c", "https://secret.example.com/c", "denied subdomain"),
            found("d", "https://other.org/d", "not allowed"),
        ]),
    )
    .await;
    let (app, [admin, member]) = app_with_search(&fake, json!([searx.entry("searx")]))
        .start_as(["boss", "worker"])
        .await;
    let r = put_rules(
        &app,
        &admin.access,
        "member",
        json!({"allow_domains": ["Example.com"], "deny_domains": ["*.secret.example.com"]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let saved: Value = r.json().await.unwrap();
    assert_eq!(saved["allow_domains"], json!(["example.com"]));
    assert_eq!(saved["deny_domains"], json!(["secret.example.com"]));
    let got: Value = app
        .get_as(&admin.access, "/api/admin/roles/member/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got, saved);
    let conv = app.new_conversation(&member.access).await;
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "x"}),
        "ok",
    )
    .await;
    let urls: Vec<&str> = r["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        ["https://example.com/a", "https://docs.example.com/b"],
        "{r}"
    );
    assert_eq!(r["data"]["hidden_results"], 2);
    // A site outside the lists cannot be searched or fetched.
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "x", "site": "other.org"}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("allow list"), "{r}");
    for url in ["https://other.org/d", "https://secret.example.com/c"] {
        let r = search_turn(
            &app,
            &fake,
            &member.access,
            &conv,
            "http_get",
            json!({"url": url}),
            "ok",
        )
        .await;
        assert_eq!(r["success"], false, "{url}: {r}");
        assert!(r["error"].as_str().unwrap().contains("list"), "{url}: {r}");
    }
    // Bad lists are refused.
    let r = put_rules(
        &app,
        &admin.access,
        "member",
        json!({"allow_domains": ["http://x/"]}),
    )
    .await;
    expect_error(r, 400, "invalid_search_rules").await;
    let r = put_rules(&app, &admin.access, "nobody", json!({})).await;
    expect_error(r, 404, "not_found").await;
    let changes: Value = app
        .get_as(&admin.access, "/api/admin/changes")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        changes["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["kind"] == "role.search"),
        "{changes}"
    );
}

#[tokio::test]
async fn queries_per_user_per_day_are_counted() {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Results(rust_results())).await;
    let (app, [admin, member]) = app_with_search(&fake, json!([searx.entry("searx")]))
        .start_as(["boss", "worker"])
        .await;
    let r = put_rules(&app, &admin.access, "member", json!({"queries_per_day": 2})).await;
    assert_eq!(r.status(), 200);
    let conv = app.new_conversation(&member.access).await;
    for _ in 0..2 {
        let r = search_turn(
            &app,
            &fake,
            &member.access,
            &conv,
            "web_search",
            json!({"query": "rust"}),
            "ok",
        )
        .await;
        assert_eq!(r["success"], true, "{r}");
    }
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "rust"}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("2 web searches for today"),
        "{r}"
    );
    assert_eq!(searx.requests().len(), 2, "the third query never left");
    // Another user has their own count.
    let other = app.signed_up("other").await;
    let conv = app.new_conversation(&other.access).await;
    let r = search_turn(
        &app,
        &fake,
        &other.access,
        &conv,
        "web_search",
        json!({"query": "rust"}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
}

#[derive(diesel::QueryableByName, Debug)]
struct Money {
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    spent: Decimal,
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    reserved: Decimal,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    holds: i64,
    /// What the model calls cost (the rest of `spent` is searches).
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    models: Decimal,
}

async fn money(app: &TestApp, user: uuid::Uuid) -> Money {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT COALESCE((SELECT sum(spent) FROM money_periods WHERE user_id = $1), 0) AS spent, \
                COALESCE((SELECT sum(reserved) FROM money_periods WHERE user_id = $1), 0) AS reserved, \
                (SELECT count(*) FROM money_holds WHERE user_id = $1)::BIGINT AS holds, \
                COALESCE((SELECT sum(cost) FROM usage_records WHERE user_id = $1), 0) AS models",
    )
    .bind::<diesel::sql_types::Uuid, _>(user)
    .get_result(&mut db)
    .await
    .unwrap()
}

#[tokio::test]
async fn each_query_is_paid_from_the_money_budget_without_overshoot() {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Results(rust_results())).await;
    let mut entry = searx.entry("searx");
    entry["price_per_query"] = json!("0.01");
    let providers = json!([{"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(),
                            "api_key": "sk-oa", "max_retries": 0}]);
    // The model costs next to nothing (at most 0.0001 a call): the budget pays for searches.
    let models = json!([{"name": "cheap", "provider": "oa", "upstream_model": "gpt-cheap",
                         "max_output": 100, "prices": [{"currency": "USD", "input": "0", "output": "1"}]}]);
    let (app, [_admin, member]) = TestApp::builder()
        .settings(move |s| {
            s.providers = serde_json::from_value(providers).unwrap();
            s.models = serde_json::from_value(models).unwrap();
            s.search_providers = serde_json::from_value(json!([entry])).unwrap();
        })
        .role(
            "member",
            json!({"tools": ["web_search"], "models": ["*"], "budget_amount": "0.015", "budget_currency": "USD"}),
        )
        .start_as(["boss", "worker"])
        .await;
    let conv = app
        .create_conversation_with(&member.access, json!({"model": "cheap"}))
        .await;
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "rust"}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    let m = money(&app, member.user_id).await;
    assert_eq!(m.spent - m.models, "0.01".parse::<Decimal>().unwrap());
    assert_eq!((m.reserved, m.holds), (Decimal::ZERO, 0));
    // 0.005 is left: the next query is refused before it leaves.
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "rust"}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("money budget"), "{r}");
    assert_eq!(searx.requests().len(), 1);
    let m = money(&app, member.user_id).await;
    assert_eq!(m.spent - m.models, "0.01".parse::<Decimal>().unwrap());
    assert!(
        m.spent <= "0.015".parse::<Decimal>().unwrap(),
        "never past the budget"
    );
    assert_eq!((m.reserved, m.holds), (Decimal::ZERO, 0));
    let mut db = app.db().await;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        outcome: String,
        #[diesel(sql_type = diesel::sql_types::Numeric)]
        cost: Decimal,
    }
    let rows: Vec<Row> =
        diesel::sql_query("SELECT outcome, cost FROM web_search_queries ORDER BY id")
            .load(&mut db)
            .await
            .unwrap();
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.outcome.clone(), r.cost.normalize().to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("ok".to_owned(), "0.01".to_owned()),
            ("refused".to_owned(), "0".to_owned())
        ]
    );
}
