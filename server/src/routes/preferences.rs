//! `/api/me/preferences`: the caller's theme and default model, stored on the account so
//! they follow the user to another browser.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Deserializer};

use crate::auth::AuthUser;
use crate::catalogue::RoleModels;
use crate::db::{self, models::preferences};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

/// The themes the web UI offers.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Follow the device (`prefers-color-scheme`).
    System,
    Light,
    Dark,
}

impl Theme {
    fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
}

/// What `PATCH` may change; at least one field.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreferencesPatch {
    theme: Option<Theme>,
    /// One of `GET /api/models`; `null` goes back to the server's default.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable)]
    default_model: Option<Option<String>>,
}

/// A field that is present, even as `null` (`Some(None)`), as opposed to absent (`None`).
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The caller's preferences.
#[utoipa::path(get, path = "/api/me/preferences", tag = "me",
    responses((status = 200, description = "The caller's preferences", body = crate::db::models::preferences::Preferences)))]
pub async fn get(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let prefs = preferences::find(&mut conn, who.id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("this account no longer exists"))?;
    Ok(HttpResponse::Ok().json(prefs))
}

/// Changes the caller's theme or default model.
#[utoipa::path(patch, path = "/api/me/preferences", tag = "me", request_body = PreferencesPatch,
    responses(
        (status = 200, description = "Changed", body = crate::db::models::preferences::Preferences),
        (status = 400, description = "Nothing to change, or an unknown theme", body = crate::error::ErrorBody),
        (status = 403, description = "The caller's role may not use the model (`model_not_allowed`, naming the role)", body = crate::error::ErrorBody),
        (status = 422, description = "The model is not offered", body = crate::error::ErrorBody)))]
pub async fn update(
    state: web::Data<AppState>,
    who: AuthUser,
    Json(body): Json<PreferencesPatch>,
) -> Result<HttpResponse, ApiError> {
    if body.theme.is_none() && body.default_model.is_none() {
        return Err(ApiError::bad_request(
            "nothing_to_change",
            "send at least one of theme, default_model",
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    if let Some(Some(model)) = &body.default_model {
        RoleModels::of(&mut conn, &who.role)
            .await?
            .check(&state.catalogue.now(), model)?;
    }
    let changes = preferences::PreferenceChanges {
        theme: body.theme.map(|t| t.as_str().to_owned()),
        default_model: body.default_model,
    };
    let prefs = preferences::update(&mut conn, who.id, &changes)
        .await?
        .ok_or_else(|| ApiError::unauthorized("this account no longer exists"))?;
    Ok(HttpResponse::Ok().json(prefs))
}
