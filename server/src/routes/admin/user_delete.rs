//! `DELETE /api/admin/users/{id}`: removes an account and what it owns, keeping what
//! accountability needs (audit rows, the usage ledger, a tombstone with the username).

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use uuid::Uuid;

use crate::auth::{AdminUser, AuthUser};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::{self, models::user};
use crate::error::ApiError;
use crate::state::AppState;

/// Deletes an account: conversations, messages, file workspace, API keys and sessions go;
/// running turns stop; tool-call audit rows and usage stay under the old username.
#[utoipa::path(delete, path = "/api/admin/users/{id}", tag = "admin", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
    (status = 404, description = "No such user", body = crate::error::ErrorBody),
    (status = 409, description = "Your own account, or the last enabled admin (with single sign-on, the last local one)", body = crate::error::ErrorBody)))]
pub async fn delete(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let keep_local = state.settings.oidc.enabled();
    let who = &admin.0;
    let mut conn = db::conn(&state.pool).await?;
    let change = Delete {
        who,
        id,
        keep_local,
    };
    let deleted = admin_change::apply(&mut conn, change).await?;
    if let Err(e) = state.workspaces.remove_all(id).await {
        tracing::warn!(error = %e, user = %id, "could not remove a deleted user's files");
    }
    tracing::info!(admin = %who.id, user = %id, username = %deleted.username, "account deleted by an admin");
    Ok(HttpResponse::NoContent().finish())
}

/// An admin's deletion of account `id`; the output is the account as it was.
struct Delete<'a> {
    who: &'a AuthUser,
    id: Uuid,
    keep_local: bool,
}

#[async_trait]
impl AdminWrite for Delete<'_> {
    type Output = user::User;
    type Error = ApiError;

    fn validate(&self) -> Result<(), ApiError> {
        if self.id == self.who.id {
            return Err(ApiError::conflict(
                "self_change",
                "you cannot delete your own account; ask another admin",
            ));
        }
        Ok(())
    }

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<user::User, ApiError> {
        crate::accounts::delete(conn, self.id, self.who.id, self.keep_local)
            .await
            .map_err(|e| super::users::change_error(e, "deleted"))
    }

    fn trail(&self, gone: &user::User) -> Option<NewChange> {
        Some(
            NewChange::by(self.who, "user.delete", &gone.username)
                .id(self.id)
                .before(user::UserView::from(gone.clone())),
        )
    }
}
