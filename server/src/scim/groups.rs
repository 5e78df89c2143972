//! SCIM `Group` operations: groups pushed by the identity provider and their members
//! (provisioned users only; ids that are not ours are ignored). Roles still come from the
//! ID token's groups at each sign-in.

use uuid::Uuid;

use super::patch::{self, GroupChange};
use super::wire::{self, GroupIn, GroupOut};
use super::{ScimError, MAX_PAGE};
use crate::db;
use crate::db::models::is_unique_violation;
use crate::db::models::scim::{self as rows, Match, ScimGroup};
use crate::state::AppState;

const MAX_DISPLAY_NAME_BYTES: usize = 256;
/// Most members one request may set.
const MAX_MEMBERS: usize = 1000;

pub async fn list(
    state: &AppState,
    m: &Match,
    offset: i64,
    limit: i64,
    with_members: bool,
) -> Result<wire::ListResponse<GroupOut>, ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    let (total, found) = rows::list_groups(&mut conn, m, offset, limit.min(MAX_PAGE)).await?;
    let mut resources = Vec::with_capacity(found.len());
    for g in found {
        resources.push(to_wire(&mut conn, g, with_members).await?);
    }
    Ok(wire::ListResponse {
        schemas: [wire::LIST_SCHEMA],
        total_results: total,
        start_index: offset + 1,
        items_per_page: resources.len(),
        resources,
    })
}

pub async fn get(state: &AppState, id: Uuid, with_members: bool) -> Result<GroupOut, ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    let g = rows::find_group(&mut conn, id)
        .await?
        .ok_or_else(|| ScimError::not_found("group"))?;
    to_wire(&mut conn, g, with_members).await
}

pub async fn create(state: &AppState, body: GroupIn) -> Result<GroupOut, ScimError> {
    check_name(&body.display_name)?;
    let members = member_ids(body.members.as_deref())?;
    let mut conn = db::conn(&state.pool).await?;
    let g = rows::insert_group(
        &mut conn,
        body.display_name.trim(),
        body.external_id.as_deref(),
    )
    .await
    .map_err(unique)?;
    if !members.is_empty() {
        rows::add_members(&mut conn, g.id, &members).await?;
    }
    to_wire(&mut conn, g, true).await
}

/// PUT: name, external id and the exact member list.
pub async fn replace(state: &AppState, id: Uuid, body: GroupIn) -> Result<GroupOut, ScimError> {
    check_name(&body.display_name)?;
    let members = member_ids(body.members.as_deref())?;
    let mut conn = db::conn(&state.pool).await?;
    rows::find_group(&mut conn, id)
        .await?
        .ok_or_else(|| ScimError::not_found("group"))?;
    rows::update_group(
        &mut conn,
        id,
        body.display_name.trim(),
        body.external_id.as_deref(),
    )
    .await
    .map_err(unique)?;
    rows::remove_members(&mut conn, id, None).await?;
    rows::add_members(&mut conn, id, &members).await?;
    drop(conn);
    get(state, id, true).await
}

/// PATCH: renames and membership changes, in order. Answers 204 (as Entra ID and Okta
/// accept) unless the provider asked for the resource.
pub async fn patch(
    state: &AppState,
    id: Uuid,
    ops: &[wire::PatchOperation],
) -> Result<(), ScimError> {
    let changes = patch::group_changes(ops)?;
    let mut conn = db::conn(&state.pool).await?;
    let g = rows::find_group(&mut conn, id)
        .await?
        .ok_or_else(|| ScimError::not_found("group"))?;
    let (mut name, mut external) = (g.display_name.clone(), g.external_id.clone());
    for change in changes {
        match change {
            GroupChange::Rename(n) => {
                check_name(&n)?;
                name = n;
            }
            GroupChange::ExternalId(e) => external = e,
            GroupChange::AddMembers(ids) => {
                rows::add_members(&mut conn, id, &ids).await?;
            }
            GroupChange::RemoveMembers(ids) => {
                rows::remove_members(&mut conn, id, Some(&ids)).await?
            }
            GroupChange::RemoveAllMembers => rows::remove_members(&mut conn, id, None).await?,
            GroupChange::ReplaceMembers(ids) => {
                rows::remove_members(&mut conn, id, None).await?;
                rows::add_members(&mut conn, id, &ids).await?;
            }
        }
    }
    if name != g.display_name || external != g.external_id {
        rows::update_group(&mut conn, id, name.trim(), external.as_deref())
            .await
            .map_err(unique)?;
    }
    Ok(())
}

pub async fn delete(state: &AppState, id: Uuid) -> Result<(), ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    if rows::delete_group(&mut conn, id).await? {
        Ok(())
    } else {
        Err(ScimError::not_found("group"))
    }
}

fn unique(e: diesel::result::Error) -> ScimError {
    if is_unique_violation(&e) {
        ScimError::conflict("a group with this displayName exists")
    } else {
        e.into()
    }
}

fn check_name(name: &str) -> Result<(), ScimError> {
    if name.trim().is_empty() || name.len() > MAX_DISPLAY_NAME_BYTES {
        return Err(ScimError::bad(
            "invalidValue",
            format!("`displayName` must be 1 to {MAX_DISPLAY_NAME_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn member_ids(members: Option<&[wire::MemberIn]>) -> Result<Vec<Uuid>, ScimError> {
    let members = members.unwrap_or_default();
    if members.len() > MAX_MEMBERS {
        return Err(ScimError::bad(
            "tooMany",
            format!("at most {MAX_MEMBERS} members"),
        ));
    }
    Ok(members
        .iter()
        .filter_map(|m| m.value.parse().ok())
        .collect())
}

async fn to_wire(
    conn: &mut diesel_async::AsyncPgConnection,
    g: ScimGroup,
    with_members: bool,
) -> Result<GroupOut, ScimError> {
    let members = if with_members {
        Some(
            rows::members(conn, g.id)
                .await?
                .into_iter()
                .map(|(value, display)| wire::Reference { value, display })
                .collect(),
        )
    } else {
        None
    };
    Ok(GroupOut {
        schemas: [wire::GROUP_SCHEMA],
        id: g.id,
        display_name: g.display_name,
        external_id: g.external_id,
        members,
        meta: wire::Meta {
            resource_type: "Group",
            created: g.created_at,
            last_modified: g.updated_at,
            location: format!("/scim/v2/Groups/{}", g.id),
        },
    })
}
