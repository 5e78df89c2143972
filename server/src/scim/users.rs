//! SCIM `User` operations. Accounts get a username made from `userName`, the default role
//! and no usable password; they sign in through single sign-on. Deactivating one disables
//! it, which ends its sessions (refresh tokens and access tokens) and its running turns.

use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use uuid::Uuid;

use super::patch::{self, UserDraft};
use super::wire::{self, UserIn, UserOut};
use super::{ScimError, MAX_PAGE};
use crate::db;
use crate::db::models::scim::{self as rows, Match, ScimUser, ScimUserFields};
use crate::db::models::{is_unique_violation, role, user};
use crate::state::AppState;

const MAX_USER_NAME_BYTES: usize = 256;

/// Lists provisioned users matching `m`.
pub async fn list(
    state: &AppState,
    m: &Match,
    offset: i64,
    limit: i64,
) -> Result<wire::ListResponse<UserOut>, ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    let (total, found) = rows::list_users(&mut conn, m, offset, limit.min(MAX_PAGE)).await?;
    let mut resources = Vec::with_capacity(found.len());
    for u in found {
        let groups = rows::groups_of(&mut conn, u.id).await?;
        resources.push(to_wire(u, groups));
    }
    Ok(wire::ListResponse {
        schemas: [wire::LIST_SCHEMA],
        total_results: total,
        start_index: offset + 1,
        items_per_page: resources.len(),
        resources,
    })
}

pub async fn get(state: &AppState, id: Uuid) -> Result<UserOut, ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    let u = rows::find_user(&mut conn, id)
        .await?
        .ok_or_else(|| ScimError::not_found("user"))?;
    let groups = rows::groups_of(&mut conn, id).await?;
    Ok(to_wire(u, groups))
}

/// Creates the account; 409 `uniqueness` when a provisioned user has that `userName`.
pub async fn create(state: &AppState, body: UserIn) -> Result<UserOut, ScimError> {
    let fields = fields_of(&body)?;
    let active = body.active.is_none_or(wire::BoolLike::get);
    let role_name = state.settings.oidc.default_role.clone();
    {
        let mut conn = db::conn(&state.pool).await?;
        if !role::exists(&mut conn, &role_name).await? {
            return Err(ScimError::new(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                None,
                format!("the default role `{role_name}` does not exist on this server"),
            ));
        }
        if rows::list_users(&mut conn, &Match::UserName(fields.user_name.clone()), 0, 1)
            .await?
            .0
            > 0
        {
            return Err(ScimError::conflict("a user with this userName exists"));
        }
    }
    let hash = crate::auth::oidc::account::unusable_password_hash(state)
        .await
        .map_err(|e| {
            ScimError::new(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                None,
                e.to_string(),
            )
        })?;
    for candidate in crate::auth::oidc::account::username_candidates(&fields.user_name) {
        let mut conn = db::conn(&state.pool).await?;
        if user::find_by_username(&mut conn, &candidate)
            .await?
            .is_some()
        {
            continue;
        }
        let (f, h, r) = (fields.clone(), hash.clone(), role_name.clone());
        let created = conn
            .transaction(|conn| {
                async move {
                    let u =
                        user::insert_external(conn, &candidate, &h, &r, user::SOURCE_SCIM).await?;
                    rows::insert_user(conn, u.id, &f).await?;
                    Ok::<_, diesel::result::Error>(u)
                }
                .scope_boxed()
            })
            .await;
        drop(conn);
        match created {
            Ok(u) => {
                tracing::info!(user_id = %u.id, "scim: account provisioned");
                if !active {
                    set_active(state, u.id, false).await?;
                }
                return get(state, u.id).await;
            }
            Err(e) if is_unique_violation(&e) => {
                let mut conn = db::conn(&state.pool).await?;
                if rows::list_users(&mut conn, &Match::UserName(fields.user_name.clone()), 0, 1)
                    .await?
                    .0
                    > 0
                {
                    return Err(ScimError::conflict("a user with this userName exists"));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ScimError::conflict(
        "no free username could be made from this userName",
    ))
}

/// PUT: the provider's full view of the user.
pub async fn replace(state: &AppState, id: Uuid, body: UserIn) -> Result<UserOut, ScimError> {
    let current = get_row(state, id).await?;
    let draft = UserDraft {
        fields: fields_of(&body)?,
        active: body.active.map_or(!current.disabled, wire::BoolLike::get),
    };
    save(state, id, draft).await
}

/// PATCH: operations applied to the current state.
pub async fn patch(
    state: &AppState,
    id: Uuid,
    ops: &[wire::PatchOperation],
) -> Result<UserOut, ScimError> {
    let current = get_row(state, id).await?;
    let mut draft = UserDraft {
        active: !current.disabled,
        fields: ScimUserFields {
            user_name: current.user_name,
            external_id: current.external_id,
            display_name: current.display_name,
            given_name: current.given_name,
            family_name: current.family_name,
            email: current.email,
        },
    };
    patch::apply_user(&mut draft, ops)?;
    check_user_name(&draft.fields.user_name)?;
    save(state, id, draft).await
}

/// DELETE: the account is disabled (its history stays) and no longer provisioned.
pub async fn delete(state: &AppState, id: Uuid) -> Result<(), ScimError> {
    get_row(state, id).await?;
    set_active(state, id, false).await?;
    let mut conn = db::conn(&state.pool).await?;
    rows::delete_user(&mut conn, id).await?;
    tracing::info!(user_id = %id, "scim: account deprovisioned");
    Ok(())
}

async fn get_row(state: &AppState, id: Uuid) -> Result<ScimUser, ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    rows::find_user(&mut conn, id)
        .await?
        .ok_or_else(|| ScimError::not_found("user"))
}

async fn save(state: &AppState, id: Uuid, draft: UserDraft) -> Result<UserOut, ScimError> {
    {
        let mut conn = db::conn(&state.pool).await?;
        rows::update_user(&mut conn, id, &draft.fields)
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    ScimError::conflict("a user with this userName exists")
                } else {
                    e.into()
                }
            })?;
    }
    set_active(state, id, draft.active).await?;
    get(state, id).await
}

/// Enables or disables the account. Disabling bumps its token version (access tokens die),
/// revokes its refresh tokens and stops its turns on every process.
async fn set_active(state: &AppState, id: Uuid, active: bool) -> Result<(), ScimError> {
    let mut conn = db::conn(&state.pool).await?;
    let changes = user::UserChanges {
        disabled: Some(!active),
        ..Default::default()
    };
    let updated = match crate::accounts::update(&mut conn, id, changes).await {
        Ok(updated) => updated,
        Err(user::UserChangeError::NotFound) => return Err(ScimError::not_found("user")),
        Err(user::UserChangeError::LastAdmin | user::UserChangeError::LastLocalAdmin) => {
            return Err(ScimError::new(
                actix_web::http::StatusCode::CONFLICT,
                Some("mutability"),
                "this account is the last enabled admin and cannot be deactivated",
            ))
        }
        Err(user::UserChangeError::Db(e)) => return Err(e.into()),
    };
    if updated.ends_access() {
        tracing::info!(user_id = %id, "scim: account deactivated; its sessions and turns end");
    }
    Ok(())
}

fn check_user_name(name: &str) -> Result<(), ScimError> {
    if name.trim().is_empty() || name.len() > MAX_USER_NAME_BYTES {
        return Err(ScimError::bad(
            "invalidValue",
            format!("`userName` must be 1 to {MAX_USER_NAME_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn fields_of(body: &UserIn) -> Result<ScimUserFields, ScimError> {
    check_user_name(&body.user_name)?;
    let bounded = |v: &Option<String>| {
        v.clone()
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(512).collect())
    };
    let name = body.name.clone().unwrap_or_default();
    Ok(ScimUserFields {
        user_name: body.user_name.trim().to_owned(),
        external_id: bounded(&body.external_id),
        display_name: bounded(&body.display_name),
        given_name: bounded(&name.given_name),
        family_name: bounded(&name.family_name),
        email: bounded(&body.emails.as_deref().and_then(wire::primary_email)),
    })
}

fn to_wire(u: ScimUser, groups: Vec<(Uuid, String)>) -> UserOut {
    UserOut {
        schemas: [wire::USER_SCHEMA],
        id: u.id,
        external_id: u.external_id,
        user_name: u.user_name,
        name: wire::NameOut {
            given_name: u.given_name,
            family_name: u.family_name,
        },
        display_name: u.display_name,
        emails: u
            .email
            .into_iter()
            .map(|value| wire::EmailOut {
                value,
                kind: "work",
                primary: true,
            })
            .collect(),
        active: !u.disabled,
        groups: groups
            .into_iter()
            .map(|(value, display)| wire::Reference { value, display })
            .collect(),
        meta: wire::Meta {
            resource_type: "User",
            created: u.created_at,
            last_modified: u.updated_at,
            location: format!("/scim/v2/Users/{}", u.id),
        },
    }
}
