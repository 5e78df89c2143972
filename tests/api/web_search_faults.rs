//! Bad upstreams and no upstream: a provider that times out, answers 429/5xx, garbage or a
//! 50 MB body gives the model a clear tool error and counts against its breaker; another
//! allowed provider answers meanwhile; with none configured the tool (and the offline demo
//! model) says so. A redirect to the metadata address is never followed by `http_get`.

use std::time::Duration;

use agentchat_tests::fake_search::{Answer, FakeSearch, Vendor};
use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::tiny_server::{Behaviour, TinyServer};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::web_search::{app_with_search, queries, rust_results, search_turn};

#[tokio::test]
async fn timeouts_throttling_garbage_and_huge_bodies_are_clear_tool_errors() {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Status(429)).await;
    let mut entry = searx.entry("searx");
    entry["timeout_secs"] = json!(1);
    let (app, [admin, member]) = app_with_search(&fake, json!([entry]))
        .settings(|s| s.search.breaker_failures = 100)
        .start_as(["boss", "worker"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    let cases = [
        (Answer::Status(429), "HTTP 429"),
        (Answer::Status(503), "HTTP 503"),
        (Answer::Garbage, "not its JSON format"),
        (Answer::Huge(50 * 1024 * 1024), "more than 2097152 bytes"),
        (
            Answer::Slow(Duration::from_secs(3), rust_results()),
            "timed out",
        ),
    ];
    for (answer, expected) in cases {
        searx.set(answer);
        let started = std::time::Instant::now();
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
        assert_eq!(r["success"], false, "{expected}: {r}");
        let error = r["error"].as_str().unwrap();
        assert!(
            error.contains("web search failed") && error.contains(expected),
            "{expected}: {error}"
        );
        assert!(
            !error.contains("upstream trouble"),
            "no upstream body echoed: {error}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{expected}");
    }
    let rows = queries(&app, &admin.access).await;
    assert_eq!(rows.len(), 5);
    assert!(rows
        .iter()
        .all(|r| r["outcome"] == "error" && r["result_urls"] == json!([])));
    // Failed queries do not use up the day's count, and the server still answers.
    searx.set(Answer::Results(rust_results()));
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

#[tokio::test]
async fn a_failing_provider_opens_its_breaker_and_another_allowed_one_answers() {
    let fake = FakeUpstream::start().await;
    let broken = FakeSearch::start(Vendor::Searxng, "", Answer::Status(502)).await;
    let brave = FakeSearch::start(Vendor::Brave, "bk", Answer::Results(rust_results())).await;
    let (app, [admin, member]) =
        app_with_search(&fake, json!([broken.entry("searx"), brave.entry("brave")]))
            .settings(|s| {
                s.search.breaker_failures = 1;
                s.search.breaker_cooldown_secs = 3600;
            })
            .start_as(["boss", "worker"])
            .await;
    let conv = app.new_conversation(&member.access).await;
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
    assert_eq!(r["data"]["provider"], "brave");
    assert_eq!(broken.requests().len(), 1);
    let providers: Value = app
        .get_as(&admin.access, "/api/admin/search-providers")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let searx = providers["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "searx")
        .unwrap();
    assert_eq!(searx["breaker_open"], true, "{providers}");
    // While its breaker is open the broken provider is not called at all.
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
    assert_eq!(r["data"]["provider"], "brave", "{r}");
    assert_eq!(broken.requests().len(), 1);
    let rows = queries(&app, &admin.access).await;
    let outcomes: Vec<(String, String)> = rows
        .iter()
        .rev()
        .map(|r| {
            (
                r["provider"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [("searx", "error"), ("brave", "ok"), ("brave", "ok")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    // When the only allowed provider is paused, the model is told so.
    let r = app
        .client
        .put(app.url("/api/admin/roles/member/search"))
        .bearer_auth(&admin.access)
        .json(&json!({"providers": ["searx"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
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
        r["error"].as_str().unwrap().contains("searx is paused"),
        "{r}"
    );
}

#[tokio::test]
async fn a_redirect_to_the_metadata_address_is_never_followed() {
    let fake = FakeUpstream::start().await;
    let redirector = TinyServer::start(Behaviour::Redirect(
        "http://169.254.169.254/latest/meta-data/".into(),
    ))
    .await;
    let (app, [_admin, member]) = app_with_search(&fake, json!([]))
        .settings({
            let allowed = redirector.addr.to_string();
            move |s| s.tools.http.allow_private_host_ports = vec![allowed]
        })
        .start_as(["boss", "worker"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    let r = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "http_get",
        json!({"url": redirector.url("/page")}),
        "ok",
    )
    .await;
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("169.254.169.254"),
        "{r}"
    );
}

#[tokio::test]
async fn with_no_provider_the_tool_and_the_demo_model_say_so() {
    let (app, [_admin, member]) = TestApp::builder()
        .role("member", json!({"tools": ["web_search"]}))
        .start_as(["boss", "worker"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    let events = app
        .chat(
            &member.access,
            &conv,
            "search the web for rust 1.80 release notes",
        )
        .await;
    let result = events.iter().find(|e| e.event == "tool_result").unwrap();
    assert_eq!(result.data["name"], "web_search");
    assert_eq!(result.data["success"], false);
    let text = streamed_text(&events);
    assert!(
        text.contains("no web search provider is configured"),
        "{text}"
    );
}

#[tokio::test]
async fn the_demo_model_searches_a_configured_provider_and_cites_what_it_found() {
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Results(rust_results())).await;
    let entry = searx.entry("searx");
    let (app, [_admin, member]) = TestApp::builder()
        .settings(move |s| s.search_providers = serde_json::from_value(json!([entry])).unwrap())
        .role("member", json!({"tools": ["web_search"]}))
        .start_as(["boss", "worker"])
        .await;
    let conv = app.new_conversation(&member.access).await;
    let events = app
        .chat(
            &member.access,
            &conv,
            "Search the web for Rust 1.80 release notes",
        )
        .await;
    assert_eq!(
        searx.requests()[0].param("q").as_deref(),
        Some("Rust 1.80 release notes")
    );
    let text = streamed_text(&events);
    assert!(
        text.contains("Announcing Rust 1.80") && text.contains("[W1]"),
        "{text}"
    );
    let stored = app.conversation(&member.access, &conv).await;
    let answer = stored["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(answer["citations"][0]["kind"], "web", "{answer}");
    assert_eq!(
        answer["citations"][0]["url"],
        "https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html"
    );
}
