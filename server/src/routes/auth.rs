//! `/api/auth/*`: register, login, refresh, logout.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use crate::auth::session::{self, NewAccountRole};
use crate::config::Registration;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/auth")
            .route("/register", web::post().to(register))
            .route("/login", web::post().to(login))
            .route("/refresh", web::post().to(refresh))
            .route("/logout", web::post().to(logout)),
    );
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Credentials {
    username: String,
    password: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RefreshBody {
    refresh_token: String,
}

#[tracing::instrument(skip_all)]
async fn register(
    state: web::Data<AppState>,
    Json(body): Json<Credentials>,
) -> Result<HttpResponse, ApiError> {
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

#[tracing::instrument(skip_all)]
async fn login(
    req: HttpRequest,
    state: web::Data<AppState>,
    Json(body): Json<Credentials>,
) -> Result<HttpResponse, ApiError> {
    let client = req.peer_addr().map(|a| a.ip());
    let pair = session::login(&state, &body.username, &body.password, client).await?;
    Ok(HttpResponse::Ok().json(pair))
}

#[tracing::instrument(skip_all)]
async fn refresh(
    state: web::Data<AppState>,
    Json(body): Json<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    let pair = session::refresh_session(&state, &body.refresh_token).await?;
    Ok(HttpResponse::Ok().json(pair))
}

#[tracing::instrument(skip_all)]
async fn logout(
    state: web::Data<AppState>,
    Json(body): Json<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    session::logout(&state, &body.refresh_token).await?;
    Ok(HttpResponse::NoContent().finish())
}
