//! An admin shares a collection a member built (issue 42.1): the admin sees any collection's
//! metadata (not its passages), grants and revokes it, every step in the admin trail; the
//! owner sees the roles it is shared with; the member still may not share it themselves.

use agentchat_tests::fake_upstream::FakeUpstream;
use reqwest::Method;
use serde_json::json;

use crate::knowledge_support::{collection, on_fake, search, send, settled, strings, upload};

const NOTES: &str = "# Onboarding\n\nNew starters collect their badge from the front desk \
    in Harrogate on their first morning.\n";

#[tokio::test]
async fn an_admin_shares_and_revokes_a_members_collection() {
    let fake = FakeUpstream::start().await;
    let (app, [root, ann, bob]) = on_fake(&fake).start_as(["root", "ann", "bob"]).await;
    let x = collection(&app, &ann.access, "Onboarding").await;
    upload(&app, &ann.access, &x, "onboarding.md", NOTES.into()).await;
    assert_eq!(
        settled(&app, &ann.access, &x, "onboarding.md").await["state"],
        "ready"
    );
    let path = format!("/api/collections/{x}");

    // The member may not share it with roles.
    let (status, body) = send(
        &app,
        Method::PUT,
        &ann.access,
        &format!("{path}/grants"),
        Some(json!({"roles": ["member"]})),
    )
    .await;
    assert_eq!(status, 403, "{body}");

    // The admin sees its metadata, in `?all=true` and by id, but not its passages.
    let (status, all) = send(
        &app,
        Method::GET,
        &root.access,
        "/api/collections?all=true",
        None,
    )
    .await;
    assert_eq!(status, 200, "{all}");
    let listed = all["items"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|c| c["id"] == x.as_str() && c["readable"] == false),
        "{all}"
    );
    let (status, seen) = send(&app, Method::GET, &root.access, &path, None).await;
    assert_eq!(
        (status, &seen["name"]),
        (200, &json!("Onboarding")),
        "{seen}"
    );
    assert_eq!(seen["owner"]["username"], "ann", "{seen}");
    let doc = seen["files"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = send(
        &app,
        Method::GET,
        &root.access,
        &format!("{path}/files/{doc}/passage?start=0&end=10"),
        None,
    )
    .await;
    assert_eq!(status, 404, "an admin reads no passage without a grant");
    assert!(search(&app, &root.access, "badge front desk", 5)
        .await
        .is_empty());
    // A member's `?all=true` is their own list.
    let (_, theirs) = send(
        &app,
        Method::GET,
        &bob.access,
        "/api/collections?all=true",
        None,
    )
    .await;
    assert_eq!(theirs["items"], json!([]), "{theirs}");

    // The admin renames it and shares it with members: bob finds it, ann sees the grant.
    let (status, renamed) = send(
        &app,
        Method::PATCH,
        &root.access,
        &path,
        Some(json!({"description": "For new starters"})),
    )
    .await;
    assert_eq!(status, 200, "{renamed}");
    let (status, shared) = send(
        &app,
        Method::PUT,
        &root.access,
        &format!("{path}/grants"),
        Some(json!({"roles": ["member"]})),
    )
    .await;
    assert_eq!(
        (status, &shared["roles"]),
        (200, &json!(["member"])),
        "{shared}"
    );
    let hits = search(&app, &bob.access, "badge front desk Harrogate", 5).await;
    assert_eq!(hits[0]["file"], "onboarding.md", "{hits:?}");
    let (_, own) = send(&app, Method::GET, &ann.access, &path, None).await;
    assert_eq!(own["roles"], json!(["member"]), "{own}");
    let (_, own_list) = send(&app, Method::GET, &ann.access, "/api/collections", None).await;
    assert_eq!(
        own_list["items"][0]["roles"],
        json!(["member"]),
        "{own_list}"
    );

    // Revoked: bob no longer finds it.
    let (status, revoked) = send(
        &app,
        Method::PUT,
        &root.access,
        &format!("{path}/grants"),
        Some(json!({"roles": []})),
    )
    .await;
    assert_eq!((status, &revoked["roles"]), (200, &json!([])), "{revoked}");
    assert!(search(&app, &bob.access, "badge front desk Harrogate", 5)
        .await
        .is_empty());

    // The trail holds each step, naming the collection and its owner.
    let rows = strings(
        &app,
        "SELECT kind || ' ' || target || ' ' || COALESCE(after::text, '') AS v \
         FROM admin_changes WHERE kind LIKE 'collection.%' ORDER BY id",
    )
    .await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows[0].starts_with("collection.update Onboarding (of ann)"),
        "{rows:?}"
    );
    assert!(
        rows[1].starts_with("collection.share Onboarding (of ann)") && rows[1].contains("member"),
        "{rows:?}"
    );
    assert!(
        rows[2].starts_with("collection.share Onboarding (of ann)"),
        "{rows:?}"
    );
}
