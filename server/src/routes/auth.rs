//! `/api/auth/*`: register, login, refresh, logout.
//!
//! API clients get both tokens in the JSON body. Browsers ask for `"session": "cookie"`: the
//! refresh token then travels only in an HttpOnly, SameSite=Strict cookie scoped to
//! `/api/auth`, out of reach of page scripts, and refresh / logout read it from there.

use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use crate::auth::password_change::{self, ChangeOptions};
use crate::auth::session::{self, NewAccountRole, TokenPair};
use crate::config::Registration;
use crate::error::ApiError;
use crate::extract::{Json, JsonOrDefault};
use crate::state::AppState;

/// Name of the browser's refresh-token cookie.
pub const REFRESH_COOKIE: &str = "agentchat_refresh";
const COOKIE_PATH: &str = "/api/auth";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/auth")
            .route("/register", web::post().to(register))
            .route("/login", web::post().to(login))
            .route("/refresh", web::post().to(refresh))
            .route("/logout", web::post().to(logout)),
    );
}

/// Where the refresh token goes.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SessionMode {
    #[default]
    Body,
    Cookie,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct Credentials {
    username: String,
    password: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
    #[serde(default)]
    session: SessionMode,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasswordChange {
    current_password: String,
    new_password: String,
    /// Also revoke every personal API key (default true: a key made with a stolen session
    /// would otherwise outlive the change).
    #[serde(default = "yes")]
    revoke_api_keys: bool,
    /// Where the new refresh token goes (as for login).
    #[serde(default)]
    session: SessionMode,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RefreshBody {
    /// Absent: the cookie is used.
    refresh_token: Option<String>,
}

/// Creates an account: the first one becomes `admin`, later ones `member`.
#[utoipa::path(post, path = "/api/auth/register", tag = "auth", request_body = Credentials, responses(
    (status = 201, description = "Created", body = crate::openapi::schemas::Registered),
    (status = 403, description = "Self-registration is closed, or password sign-in is off", body = crate::error::ErrorBody),
    (status = 409, description = "The username is taken", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
async fn register(
    state: web::Data<AppState>,
    Json(body): Json<Credentials>,
) -> Result<HttpResponse, ApiError> {
    password_login_allowed(&state)?;
    if state.settings.auth.registration == Registration::Closed {
        return Err(ApiError::forbidden(
            "self-registration is closed; ask an admin for an account",
        ));
    }
    let user = session::create_account(
        &state,
        &body.username,
        &body.password,
        NewAccountRole::SelfRegistered,
    )
    .await?;
    Ok(HttpResponse::Created().json(serde_json::json!({
        "id": user.id, "username": user.username, "role": user.role
    })))
}

/// Signs in: an access token, and a refresh token in the body or (browsers) in a cookie.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginBody, responses(
    (status = 200, description = "Signed in", body = crate::auth::session::TokenPair),
    (status = 401, description = "Unknown user or wrong password", body = crate::error::ErrorBody),
    (status = 403, description = "The account is disabled, or password sign-in is off", body = crate::error::ErrorBody),
    (status = 429, description = "Too many failed attempts", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
async fn login(
    req: HttpRequest,
    state: web::Data<AppState>,
    Json(body): Json<LoginBody>,
) -> Result<HttpResponse, ApiError> {
    password_login_allowed(&state)?;
    cookie_origin_check(&req, &state, body.session)?;
    let client = crate::security::client_ip(&req, &state.settings.security.trusted_proxies);
    let pair = session::login(&state, &body.username, &body.password, client).await?;
    Ok(respond(&state, pair, body.session))
}

/// `POST /api/me/password`: ends every other session and returns a new pair (registered
/// with the other `/me` routes).
#[utoipa::path(post, path = "/api/me/password", tag = "me",
    request_body = PasswordChange, responses(
    (status = 200, description = "Changed; a new pair for this session", body = crate::auth::session::TokenPair),
    (status = 403, description = "Wrong current password, or a foreign Origin", body = crate::error::ErrorBody),
    (status = 409, description = "The account signs in through single sign-on (`external_account`)", body = crate::error::ErrorBody),
    (status = 429, description = "Too many wrong passwords", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
pub(crate) async fn change_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: crate::auth::AuthUser,
    Json(body): Json<PasswordChange>,
) -> Result<HttpResponse, ApiError> {
    cookie_origin_check(&req, &state, body.session)?;
    let client = crate::security::client_ip(&req, &state.settings.security.trusted_proxies);
    let options = ChangeOptions {
        revoke_api_keys: body.revoke_api_keys,
    };
    let changed = password_change::change_password(
        &state,
        who.id,
        &body.current_password,
        &body.new_password,
        options,
        client,
    )
    .await?;
    if changed.api_keys_revoked > 0 {
        tracing::info!(user = %who.id, keys = changed.api_keys_revoked, "API keys revoked with a password change");
    }
    Ok(respond(&state, changed.tokens, body.session))
}

/// Rotates the refresh token (from the body, else the cookie) for a new pair.
#[utoipa::path(post, path = "/api/auth/refresh", tag = "auth",
    request_body(content = Option<RefreshBody>, description = "Empty: the cookie is used"), responses(
    (status = 200, description = "A new pair", body = crate::auth::session::TokenPair),
    (status = 401, description = "No, an expired or a revoked refresh token", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
async fn refresh(
    req: HttpRequest,
    state: web::Data<AppState>,
    JsonOrDefault(body): JsonOrDefault<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    let (token, mode) = presented(&req, body)?;
    cookie_origin_check(&req, &state, mode)?;
    let pair = session::refresh_session(&state, &token)
        .await
        .map_err(ApiError::from);
    match pair {
        Ok(pair) => Ok(respond(&state, pair, mode)),
        Err(e) if mode == SessionMode::Cookie => {
            // A dead cookie is of no further use: clear it with the 401.
            let mut resp = actix_web::ResponseError::error_response(&e);
            let _ = resp.add_cookie(&expired_cookie(&state));
            Ok(resp)
        }
        Err(e) => Err(e),
    }
}

/// Ends the session of that refresh token.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth",
    request_body(content = Option<RefreshBody>, description = "Empty: the cookie is used"), responses(
    (status = 204, description = "Signed out"),
    (status = 401, description = "No, an expired or a revoked refresh token", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
async fn logout(
    req: HttpRequest,
    state: web::Data<AppState>,
    JsonOrDefault(body): JsonOrDefault<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    let (token, mode) = presented(&req, body)?;
    cookie_origin_check(&req, &state, mode)?;
    session::logout(&state, &token).await?;
    Ok(HttpResponse::NoContent()
        .cookie(expired_cookie(&state))
        .finish())
}

/// 403 when only single sign-on signs people in.
fn password_login_allowed(state: &AppState) -> Result<(), ApiError> {
    if state.settings.oidc.password_login == crate::config::PasswordLogin::Disabled {
        return Err(ApiError::new(
            actix_web::http::StatusCode::FORBIDDEN,
            "password_login_disabled",
            "password sign-in is turned off on this server; sign in with single sign-on",
        ));
    }
    Ok(())
}

/// A request that is authenticated by (or sets) the cookie must come from our own origin.
fn cookie_origin_check(
    req: &HttpRequest,
    state: &AppState,
    mode: SessionMode,
) -> Result<(), ApiError> {
    if mode == SessionMode::Cookie {
        let security = &state.settings.security;
        crate::security::origin::check_same_origin(
            req,
            &security.allowed_origins,
            &security.trusted_proxies,
        )?;
    }
    Ok(())
}

/// The refresh token from the body, else from the cookie.
fn presented(req: &HttpRequest, body: RefreshBody) -> Result<(String, SessionMode), ApiError> {
    if let Some(t) = body.refresh_token {
        return Ok((t, SessionMode::Body));
    }
    req.cookie(REFRESH_COOKIE)
        .map(|c| (c.value().to_owned(), SessionMode::Cookie))
        .ok_or_else(|| {
            ApiError::unauthorized("no refresh token: send `refresh_token` or sign in again")
        })
}

fn respond(state: &AppState, mut pair: TokenPair, mode: SessionMode) -> HttpResponse {
    match mode {
        SessionMode::Body => HttpResponse::Ok().json(pair),
        SessionMode::Cookie => {
            let cookie = refresh_cookie(state, std::mem::take(&mut pair.refresh_token));
            HttpResponse::Ok().cookie(cookie).json(serde_json::json!({
                "access_token": pair.access_token,
                "token_type": pair.token_type,
                "expires_in": pair.expires_in,
            }))
        }
    }
}

/// The browser's refresh-token cookie (also set by the single sign-on callback).
pub(crate) fn refresh_cookie(state: &AppState, token: String) -> Cookie<'static> {
    Cookie::build(REFRESH_COOKIE, token)
        .http_only(true)
        .secure(state.settings.auth.cookie_secure)
        .same_site(SameSite::Strict)
        .path(COOKIE_PATH)
        .max_age(CookieDuration::seconds(
            i64::try_from(state.settings.auth.refresh_token_ttl.as_secs()).unwrap_or(i64::MAX),
        ))
        .finish()
}

fn expired_cookie(state: &AppState) -> Cookie<'static> {
    let mut c = Cookie::build(REFRESH_COOKIE, "")
        .http_only(true)
        .secure(state.settings.auth.cookie_secure)
        .same_site(SameSite::Strict)
        .path(COOKIE_PATH)
        .finish();
    c.make_removal();
    c
}
