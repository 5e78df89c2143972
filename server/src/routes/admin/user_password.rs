//! `POST /api/admin/users/{id}/password`: an admin sets a new password for a local account,
//! or has the server generate one (shown once). Every session of the account ends, and its
//! personal API keys are revoked: a reset is what an admin does for a compromised account.

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use rand::Rng;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::auth::{password, AdminUser, AuthUser};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::{self, models::api_key, models::refresh_token, models::user};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

/// Characters of a generated password: no look-alikes (0/O, 1/l/I).
const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// 20 characters of 55: about 115 bits.
const GENERATED_CHARS: usize = 20;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// The new password; absent or null: the server generates one and answers it once.
    password: Option<String>,
}

/// The answer: the generated password when the server made one (never stored in clear).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ResetAnswer {
    generated_password: Option<String>,
}

fn generate() -> String {
    let mut rng = rand::thread_rng();
    (0..GENERATED_CHARS)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

/// Sets a local account's password; all its sessions, access tokens and API keys end at once.
#[utoipa::path(post, path = "/api/admin/users/{id}/password", tag = "admin",
    params(("id" = Uuid, Path)), request_body = ResetBody, responses(
    (status = 200, description = "Set; the generated password if the server made one", body = ResetAnswer),
    (status = 400, description = "The password breaks the length rule", body = crate::error::ErrorBody),
    (status = 404, description = "No such user", body = crate::error::ErrorBody),
    (status = 409, description = "A single sign-on account, or your own (use your account's password change)", body = crate::error::ErrorBody)))]
pub async fn reset(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
    Json(body): Json<ResetBody>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    if id == admin.0.id {
        return Err(ApiError::conflict(
            "self_change",
            "change your own password from your account (it asks for the current one)",
        ));
    }
    let (new_password, generated) = match body.password {
        Some(p) => {
            password::check_length(&p).map_err(|m| ApiError::bad_request("invalid_password", m))?;
            (p, false)
        }
        None => (generate(), true),
    };
    let account = {
        let mut conn = db::conn(&state.pool).await?;
        user::find(&mut conn, id)
            .await?
            .ok_or_else(|| ApiError::not_found("user"))?
    };
    if account.source != user::SOURCE_PASSWORD {
        return Err(ApiError::conflict(
            "external_account",
            format!(
                "`{}` signs in through single sign-on; its password is managed by the identity provider",
                account.username
            ),
        ));
    }
    let hash = state
        .hasher
        .hash(SecretString::from(new_password.clone()))
        .await
        .map_err(ApiError::internal)?;
    let mut conn = db::conn(&state.pool).await?;
    let change = Reset {
        who: &admin.0,
        id,
        username: &account.username,
        hash: &hash,
        generated,
    };
    admin_change::apply(&mut conn, change).await?;
    Ok(HttpResponse::Ok().json(ResetAnswer {
        generated_password: generated.then_some(new_password),
    }))
}

/// A new password hash for account `id`; the output is how many API keys ended with it.
struct Reset<'a> {
    who: &'a AuthUser,
    id: Uuid,
    username: &'a str,
    hash: &'a str,
    generated: bool,
}

#[async_trait]
impl AdminWrite for Reset<'_> {
    type Output = usize;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<usize, Self::Error> {
        user::set_password(conn, self.id, self.hash).await?;
        refresh_token::revoke_all_for_user(conn, self.id).await?;
        api_key::delete_all_owned(conn, self.id).await
    }

    fn trail(&self, keys: &usize) -> Option<NewChange> {
        let after =
            json!({"generated": self.generated, "sessions_ended": true, "api_keys_revoked": keys});
        Some(
            NewChange::by(self.who, "user.password_reset", self.username)
                .id(self.id)
                .after(after),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_passwords_are_long_random_and_unambiguous() {
        let a = super::generate();
        let b = super::generate();
        assert_eq!(a.chars().count(), super::GENERATED_CHARS);
        assert_ne!(a, b);
        assert!(!a.contains(['0', 'O', '1', 'l', 'I']));
        assert!(crate::auth::password::check_length(&a).is_ok());
    }
}
