//! `/api/admin/users`: list, create and change accounts.

use actix_web::{web, HttpResponse};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::{user_delete, user_password};
use crate::auth::session::{self, NewAccountRole};
use crate::auth::AdminUser;
use crate::auth::AuthUser;
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::{self, models::role, models::user};
use crate::error::ApiError;
use crate::extract::{double_option, Json};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/users")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/users/{id}")
            .route(web::patch().to(update))
            .route(web::delete().to(user_delete::delete)),
    )
    .route("/users/{id}/password", web::post().to(user_password::reset));
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct UserCreate {
    username: String,
    password: String,
    role: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct UserPatch {
    role: Option<String>,
    disabled: Option<bool>,
    /// Null: use the role's budget.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    token_budget: Option<Option<i64>>,
}

/// Accounts, oldest first.
#[utoipa::path(get, path = "/api/admin/users", tag = "admin", params(ListQuery),
    responses((status = 200, description = "Accounts", body = crate::openapi::schemas::UserList)))]
async fn list(
    state: web::Data<AppState>,
    _admin: AdminUser,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(100).clamp(1, 500);
    let offset = query.offset.unwrap_or(0).max(0);
    let mut conn = db::conn(&state.pool).await?;
    let users: Vec<user::UserView> = user::list(&mut conn, limit, offset)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(HttpResponse::Ok().json(json!({"items": users})))
}

/// Creates an account with a role.
#[utoipa::path(post, path = "/api/admin/users", tag = "admin", request_body = UserCreate, responses(
    (status = 201, description = "Created", body = crate::db::models::user::UserView),
    (status = 409, description = "The username is taken", body = crate::error::ErrorBody),
    (status = 422, description = "No such role", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<UserCreate>,
) -> Result<HttpResponse, ApiError> {
    let created = session::create_account(
        &state,
        &body.username,
        &body.password,
        NewAccountRole::ByAdmin {
            role: &body.role,
            admin: &admin.0,
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(user::UserView::from(created)))
}

/// Changes an account's role, disabled flag or own budget.
#[utoipa::path(patch, path = "/api/admin/users/{id}", tag = "admin", params(("id" = Uuid, Path)),
    request_body = UserPatch, responses(
    (status = 200, description = "Changed", body = crate::db::models::user::UserView),
    (status = 409, description = "That would leave no enabled admin (or, with single sign-on, no enabled local admin), or an admin would disable themselves", body = crate::error::ErrorBody),
    (status = 422, description = "No such role", body = crate::error::ErrorBody)))]
async fn update(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
    Json(body): Json<UserPatch>,
) -> Result<HttpResponse, ApiError> {
    if let Some(Some(b)) = body.token_budget {
        if b < 0 {
            return Err(ApiError::bad_request(
                "invalid_budget",
                "token_budget must be a non-negative number of tokens, or null",
            ));
        }
    }
    let mut conn = db::conn(&state.pool).await?;
    if body.disabled == Some(true) && *id == admin.0.id {
        refuse_self_disable(&mut conn, &admin, state.settings.oidc.enabled()).await?;
    }
    if let Some(name) = &body.role {
        if !role::exists(&mut conn, name).await? {
            return Err(ApiError::unprocessable(
                "unknown_role",
                format!("no role named `{name}`"),
            ));
        }
    }
    let changes = user::UserChanges {
        role: body.role,
        disabled: body.disabled,
        token_budget: body.token_budget,
        // With single sign-on on, a local admin is the way back in if the provider fails.
        keep_local_admin: state.settings.oidc.enabled(),
    };
    let change = Update {
        who: &admin.0,
        id: *id,
        changes,
    };
    match admin_change::apply(&mut conn, change).await {
        Ok(u) => Ok(HttpResponse::Ok().json(user::UserView::from(u.after))),
        Err(e) => Err(change_error(e, "disabled or demoted")),
    }
}

/// Always an error: the last admin hears `last_admin` (as anyone disabling them would);
/// otherwise `self_change`.
async fn refuse_self_disable(
    conn: &mut diesel_async::AsyncPgConnection,
    admin: &AdminUser,
    keep_local: bool,
) -> Result<(), ApiError> {
    let id = admin.0.id;
    conn.transaction(|conn| {
        async move {
            user::lock_admin_set(conn).await?;
            let me = user::find(conn, id)
                .await?
                .ok_or(user::UserChangeError::NotFound)?;
            user::check_other_admins(conn, &me, keep_local).await
        }
        .scope_boxed()
    })
    .await
    .map_err(|e| change_error(e, "disabled or demoted"))?;
    Err(ApiError::conflict(
        "self_change",
        "you cannot disable your own account; ask another admin",
    ))
}

/// The answer to a refused account change; `verb` says what was refused.
pub(super) fn change_error(e: user::UserChangeError, verb: &str) -> ApiError {
    match e {
        user::UserChangeError::NotFound => ApiError::not_found("user"),
        user::UserChangeError::LastAdmin => ApiError::conflict(
            "last_admin",
            format!("the last enabled admin cannot be {verb}"),
        ),
        user::UserChangeError::LastLocalAdmin => ApiError::conflict(
            "last_local_admin",
            format!(
                "the last enabled admin with a local password cannot be {verb} while single \
                 sign-on is on: it is the way back in when the identity provider fails"
            ),
        ),
        user::UserChangeError::Db(e) => e.into(),
    }
}

/// An admin's change of an account's role, state or budget.
struct Update<'a> {
    who: &'a AuthUser,
    id: Uuid,
    changes: user::UserChanges,
}

#[async_trait::async_trait]
impl AdminWrite for Update<'_> {
    type Output = user::Updated;
    type Error = user::UserChangeError;

    async fn write(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
    ) -> Result<user::Updated, Self::Error> {
        // A disabled or re-roled user's turns stop on whichever process runs them.
        crate::accounts::update(conn, self.id, self.changes.clone()).await
    }

    fn trail(&self, u: &user::Updated) -> Option<NewChange> {
        Some(
            NewChange::by(self.who, "user.update", &u.after.username)
                .id(self.id)
                .before(user::UserView::from(u.before.clone()))
                .after(user::UserView::from(u.after.clone())),
        )
    }
}
