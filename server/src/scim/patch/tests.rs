//! The PATCH bodies Entra ID and Okta document.

use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::scim::wire::PatchRequest;

fn ops(body: serde_json::Value) -> Vec<PatchOperation> {
    serde_json::from_value::<PatchRequest>(body)
        .unwrap()
        .operations
}

fn draft() -> UserDraft {
    UserDraft {
        fields: ScimUserFields {
            user_name: "alice@example.com".into(),
            ..Default::default()
        },
        active: true,
    }
}

#[test]
fn entra_deactivates_with_a_capitalised_string() {
    let mut d = draft();
    let body = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "Replace", "path": "active", "value": "False"}]});
    apply_user(&mut d, &ops(body)).unwrap();
    assert!(!d.active);
}

#[test]
fn okta_deactivates_without_a_path() {
    let mut d = draft();
    let body = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": false}}]});
    apply_user(&mut d, &ops(body)).unwrap();
    assert!(!d.active);
}

#[test]
fn entra_updates_attributes_and_ignores_extensions() {
    let mut d = draft();
    let body = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [
        {"op": "Replace", "path": "userName", "value": "alice.new@example.com"},
        {"op": "Replace", "path": "displayName", "value": "Alice New"},
        {"op": "Add", "path": "emails[type eq \"work\"].value", "value": "alice.new@example.com"},
        {"op": "Replace", "path": "name.givenName", "value": "Alice"},
        {"op": "Replace", "path": "name.familyName", "value": "New"},
        {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "R&D"},
        {"op": "Replace", "path": "externalId", "value": "0a1b"}
    ]});
    apply_user(&mut d, &ops(body)).unwrap();
    assert_eq!(d.fields.user_name, "alice.new@example.com");
    assert_eq!(d.fields.display_name.as_deref(), Some("Alice New"));
    assert_eq!(d.fields.email.as_deref(), Some("alice.new@example.com"));
    assert_eq!(d.fields.given_name.as_deref(), Some("Alice"));
    assert_eq!(d.fields.family_name.as_deref(), Some("New"));
    assert_eq!(d.fields.external_id.as_deref(), Some("0a1b"));
    assert!(d.active);
}

#[test]
fn bad_operations_are_refused() {
    let mut d = draft();
    let e = apply_user(
        &mut d,
        &ops(json!({"Operations": [{"op": "move", "path": "active"}]})),
    )
    .unwrap_err();
    assert_eq!(e.scim_type, Some("invalidSyntax"));
    let e = apply_user(
        &mut d,
        &ops(json!({"Operations": [{"op": "replace", "path": "active", "value": "maybe"}]})),
    )
    .unwrap_err();
    assert_eq!(e.scim_type, Some("invalidValue"));
    let e = apply_user(
        &mut d,
        &ops(json!({"Operations": [{"op": "remove", "path": "userName"}]})),
    )
    .unwrap_err();
    assert_eq!(e.scim_type, Some("invalidValue"));
}

#[test]
fn group_membership_the_way_both_providers_send_it() {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    // Entra ID: add and remove with a list of values.
    let entra = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [
        {"op": "Add", "path": "members", "value": [{"value": a.to_string()}]},
        {"op": "Remove", "path": "members", "value": [{"value": b.to_string()}]},
        {"op": "Replace", "path": "displayName", "value": "Renamed"}
    ]});
    assert_eq!(
        group_changes(&ops(entra)).unwrap(),
        [
            GroupChange::AddMembers(vec![a]),
            GroupChange::RemoveMembers(vec![b]),
            GroupChange::Rename("Renamed".into())
        ]
    );
    // Okta: remove by filter, rename without a path.
    let okta = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [
        {"op": "remove", "path": format!("members[value eq \"{a}\"]")},
        {"op": "replace", "value": {"id": "x", "displayName": "Okta Name"}},
        {"op": "add", "path": "members", "value": [{"value": b.to_string(), "display": "b@example.com"}]}
    ]});
    assert_eq!(
        group_changes(&ops(okta)).unwrap(),
        [
            GroupChange::RemoveMembers(vec![a]),
            GroupChange::Rename("Okta Name".into()),
            GroupChange::AddMembers(vec![b])
        ]
    );
}

#[test]
fn foreign_member_ids_are_left_out_and_odd_paths_refused() {
    let body = json!({"Operations": [{"op": "add", "path": "members", "value": [{"value": "not-a-uuid"}]}]});
    assert_eq!(
        group_changes(&ops(body)).unwrap(),
        [GroupChange::AddMembers(vec![])]
    );
    let body = json!({"Operations": [{"op": "replace", "path": "owners", "value": "x"}]});
    assert_eq!(
        group_changes(&ops(body)).unwrap_err().scim_type,
        Some("invalidPath")
    );
    let body = json!({"Operations": [{"op": "remove", "path": "members[display eq \"x\"]"}]});
    assert_eq!(
        group_changes(&ops(body)).unwrap_err().scim_type,
        Some("invalidPath")
    );
}
