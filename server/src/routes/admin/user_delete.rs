//! `DELETE /api/admin/users/{id}`: removes an account and what it owns, keeping what
//! accountability needs (audit rows, the usage ledger, a tombstone with the username).

use actix_web::{web, HttpResponse};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use uuid::Uuid;

use crate::auth::AdminUser;
use crate::db::models::admin_change::{self, NewChange};
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
    if id == admin.0.id {
        return Err(ApiError::conflict(
            "self_change",
            "you cannot delete your own account; ask another admin",
        ));
    }
    let keep_local = state.settings.oidc.enabled();
    let who = &admin.0;
    let mut conn = db::conn(&state.pool).await?;
    let deleted = conn
        .transaction(|conn| {
            async move {
                let gone = crate::accounts::delete(conn, id, who.id, keep_local).await?;
                let change = NewChange::by(who, "user.delete", &gone.username)
                    .id(id)
                    .before(user::UserView::from(gone.clone()));
                admin_change::record(conn, change).await?;
                Ok::<_, user::UserChangeError>(gone)
            }
            .scope_boxed()
        })
        .await
        .map_err(|e| super::users::change_error(e, "deleted"))?;
    if let Err(e) = state.workspaces.remove_all(id).await {
        tracing::warn!(error = %e, user = %id, "could not remove a deleted user's files");
    }
    tracing::info!(admin = %who.id, user = %id, username = %deleted.username, "account deleted by an admin");
    Ok(HttpResponse::NoContent().finish())
}
