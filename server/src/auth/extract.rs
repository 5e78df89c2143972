//! Request guards: `AuthUser` for any signed-in user, `AdminUser` for admins only.

use std::future::Future;
use std::pin::Pin;

use actix_web::{dev::Payload, http::header, web, FromRequest, HttpRequest};
use uuid::Uuid;

use crate::db::{self, models::user};
use crate::error::ApiError;
use crate::state::AppState;

/// A request carrying a valid access token of an enabled user whose token version matches.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub id: Uuid,
    pub username: String,
    pub role: String,
}

impl AuthUser {
    pub fn is_admin(&self) -> bool {
        self.role == db::models::role::ADMIN
    }
}

/// An [`AuthUser`] whose role is `admin`; anyone else gets 403.
#[derive(Debug, Clone)]
pub struct AdminUser(pub AuthUser);

fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

async fn authenticate(
    state: web::Data<AppState>,
    token: Option<String>,
) -> Result<AuthUser, ApiError> {
    let token = token.ok_or_else(|| ApiError::unauthorized("missing bearer access token"))?;
    let claims = state
        .jwt
        .verify(&token)
        .map_err(|_| ApiError::unauthorized("invalid or expired access token"))?;
    let mut conn = db::conn(&state.pool).await?;
    let current = user::auth_state(&mut conn, claims.sub)
        .await?
        .ok_or_else(|| ApiError::unauthorized("invalid or expired access token"))?;
    if current.disabled {
        return Err(ApiError::unauthorized("this account is disabled"));
    }
    if current.token_version != claims.ver {
        return Err(ApiError::unauthorized(
            "this access token has been revoked; sign in again",
        ));
    }
    Ok(AuthUser {
        id: claims.sub,
        username: current.username,
        role: current.role,
    })
}

impl FromRequest for AuthUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer(req);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("no app state")))?;
            authenticate(state, token).await
        })
    }
}

impl FromRequest for AdminUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let user = AuthUser::from_request(req, payload);
        Box::pin(async move {
            let user = user.await?;
            if !user.is_admin() {
                return Err(ApiError::forbidden("this needs the admin role"));
            }
            Ok(AdminUser(user))
        })
    }
}
