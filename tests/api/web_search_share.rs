//! Web sources through a share link (issue 45 with DESIGN §14): a reader of a shared
//! conversation gets the answer's web citations — page titles and URLs — as the owner does,
//! within the link's snapshot; a link that hides the tools' details keeps the titles and
//! links (as knowledge sources keep their file names) but not the quoted snippets nor the
//! search results themselves.

use agentchat_tests::fake_search::{Answer, FakeSearch, Vendor};
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::web_search::{app_with_search, rust_results, search_turn};

/// `GET /api/shares/{id}` as `token`'s user (asserting 200); its JSON.
async fn read_share(app: &TestApp, token: &str, id: &str) -> Value {
    let r = app
        .client
        .get(app.url(&format!("/api/shares/{id}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

/// Every citation of the assistant messages of a shared conversation, in order.
fn citations(shared: &Value) -> Vec<Value> {
    shared["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["citations"].as_array())
        .flatten()
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_share_link_lists_the_answers_web_sources_within_its_snapshot_and_hides_snippets_when_asked(
) {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Results(rust_results())).await;
    let (app, [_admin, owner, reader]) = app_with_search(&fake, json!([searx.entry("searx")]))
        .start_as(["boss", "worker", "reader"])
        .await;
    let conv = app.new_conversation(&owner.access).await;
    search_turn(
        &app,
        &fake,
        &owner.access,
        &conv,
        "web_search",
        json!({"query": "rust 1.80 release"}),
        "LazyLock is stable [W2], as the blog says [W1].",
    )
    .await;

    let r = app
        .post_as(&owner.access, &format!("/api/conversations/{conv}/shares"))
        .json(&json!({"scope": "org", "redact_tools": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let link: Value = r.json().await.unwrap();
    let id = link["id"].as_str().unwrap();

    // A later answer citing the other result is not in the snapshot.
    fake.push(Reply::text("Only the notes matter here [W2]."));
    app.chat(&owner.access, &conv, "and again?").await;

    let shared = read_share(&app, &reader.access, id).await;
    let cites = citations(&shared);
    assert_eq!(cites.len(), 2, "{shared}");
    assert_eq!(cites[0]["kind"], "web");
    assert_eq!(cites[0]["n"], 1);
    assert_eq!(cites[0]["marker"], "W2");
    assert_eq!(cites[0]["title"], "Rust release notes");
    assert_eq!(cites[0]["url"], "https://doc.rust-lang.org/releases.html");
    assert!(
        cites[0]["quote"].as_str().unwrap().contains("LazyLock"),
        "{}",
        cites[0]
    );
    assert_eq!(cites[1]["n"], 2);
    assert_eq!(
        cites[1]["url"],
        "https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html"
    );
    let last = shared["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"],
        "LazyLock is stable [W2], as the blog says [W1]."
    );

    // Hiding the tools' details keeps titles and links, drops the snippets and the results.
    let r = app
        .patch_as(&owner.access, &format!("/api/shares/{id}"))
        .json(&json!({"redact_tools": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let shared = read_share(&app, &reader.access, id).await;
    let cites = citations(&shared);
    assert_eq!(cites.len(), 2, "{shared}");
    assert_eq!(cites[0]["title"], "Rust release notes");
    assert_eq!(cites[0]["url"], "https://doc.rust-lang.org/releases.html");
    assert!(cites.iter().all(|c| c.get("quote").is_none()), "{cites:?}");
    let body = shared.to_string();
    assert!(!body.contains("LazyCell"), "a snippet leaked: {body}");
    assert!(
        !body.contains("happy to announce"),
        "a snippet leaked: {body}"
    );
    let tool = shared["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool["content"].as_str().unwrap().starts_with("[hidden"),
        "{tool}"
    );
}
