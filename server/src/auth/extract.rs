//! Request guards: `AuthUser` for any signed-in user, `AdminUser` for admins only.

use std::future::Future;
use std::pin::Pin;

use actix_web::{dev::Payload, http::header, web, FromRequest, HttpRequest};
use uuid::Uuid;

use super::token::SignedToken;
use crate::db::{self, models::user, models::user::Rejection};
use crate::error::ApiError;
use crate::state::AppState;

/// A request carrying a valid access token of an enabled user whose token version matches.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub id: Uuid,
    pub username: String,
    pub role: String,
    /// When the token's session signed in (refreshes do not move it).
    pub signed_in_at: chrono::DateTime<chrono::Utc>,
}

impl crate::domain::Actor for AuthUser {
    fn actor_id(&self) -> Uuid {
        self.id
    }
    fn actor_name(&self) -> &str {
        &self.username
    }
}

impl AuthUser {
    pub fn is_admin(&self) -> bool {
        self.role == db::models::role::ADMIN
    }

    /// Whether the session signed in within `within` (a sensitive action may then go on
    /// without asking for the password again).
    pub fn signed_in_within(&self, within: std::time::Duration) -> bool {
        let age = chrono::Utc::now() - self.signed_in_at;
        age.to_std().is_ok_and(|age| age <= within)
    }
}

/// An [`AuthUser`] whose role is `admin`; anyone else gets 403.
#[derive(Debug, Clone)]
pub struct AdminUser(pub AuthUser);

fn verify(state: &AppState, token: Option<String>) -> Result<SignedToken, ApiError> {
    verify_claims(state, token).map(|c| SignedToken {
        user_id: c.sub,
        token_version: c.ver,
    })
}

fn verify_claims(state: &AppState, token: Option<String>) -> Result<super::jwt::Claims, ApiError> {
    let token = token.ok_or_else(|| ApiError::unauthorized("missing bearer access token"))?;
    if super::api_key::looks_like_key(&token) {
        return Err(ApiError::unauthorized(
            "API keys are accepted only by the /v1 API; sign in for this one",
        ));
    }
    state
        .jwt
        .verify(&token)
        .map_err(|_| ApiError::unauthorized("invalid or expired access token"))
}

pub(super) fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// The token's bearer and the token version it carries, checked against the account.
pub(super) async fn authenticate(
    state: web::Data<AppState>,
    token: Option<String>,
) -> Result<(AuthUser, i32), ApiError> {
    let claims = verify_claims(&state, token)?;
    let mut conn = db::conn(&state.pool).await?;
    let current = user::auth_state(&mut conn, claims.sub)
        .await?
        .ok_or(Rejection::NoAccount)?;
    current.admits(claims.ver)?;
    let user = AuthUser {
        id: claims.sub,
        username: current.username,
        role: current.role,
        signed_in_at: chrono::DateTime::from_timestamp(claims.auth_time, 0).unwrap_or_default(),
    };
    Ok((user, claims.ver))
}

impl FromRequest for AuthUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer(req);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("no app state")))?;
            authenticate(state, token).await.map(|(user, _)| user)
        })
    }
}

impl FromRequest for SignedToken {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer(req);
        std::future::ready(match req.app_data::<web::Data<AppState>>() {
            Some(state) => verify(state, token),
            None => Err(ApiError::internal(anyhow::anyhow!("no app state"))),
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
