//! `GET /api/models`: the models the caller's role may use, with what a picker shows.

use actix_web::{web, HttpResponse};
use serde::Serialize;

use crate::auth::AuthUser;
use crate::catalogue::CatalogueModel;
use crate::catalogue::RoleModels;
use crate::config::{InputKind, ProviderKind};
use crate::db;
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/models", web::get().to(list));
}

/// `GET /api/models`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ModelList {
    /// The model a new conversation gets when it names none (null: the role may use none).
    pub default: Option<String>,
    /// The default model's provider kind: `openai`, `anthropic` or `demo`.
    pub provider: Option<ProviderKind>,
    /// The names the caller may pick, in catalogue order.
    pub models: Vec<String>,
    /// The same models with their limits and prices.
    pub details: Vec<ModelInfo>,
}

/// One model as a picker shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ModelInfo {
    pub name: String,
    /// The `[[providers]]` entry that serves it.
    pub provider: String,
    pub kind: ProviderKind,
    pub context_window: u64,
    pub max_output: u32,
    /// The price in force per million tokens (null: unpriced).
    pub price: Option<PriceView>,
    /// Models that answer when this one fails before its first token.
    pub fallbacks: Vec<String>,
    /// What it reads: `["text"]` or `["text", "image"]` (images may be attached).
    pub input: Vec<InputKind>,
    /// Largest image one request may give it, in bytes.
    pub max_image_bytes: u64,
    /// Most images one request may give it.
    pub max_images: u32,
}

/// A price per million tokens, as exact decimal strings.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PriceView {
    pub currency: String,
    pub input: String,
    pub output: String,
    pub cache_read: String,
    pub cache_write: String,
}

impl ModelInfo {
    pub fn of(m: &CatalogueModel) -> Self {
        Self {
            name: m.name.clone(),
            provider: m.provider.clone(),
            kind: m.kind,
            context_window: m.context_window,
            max_output: m.max_output,
            price: m.price_at(chrono::Utc::now()).map(|p| PriceView {
                currency: p.currency,
                input: p.input.normalize().to_string(),
                output: p.output.normalize().to_string(),
                cache_read: p.cache_read.normalize().to_string(),
                cache_write: p.cache_write.normalize().to_string(),
            }),
            fallbacks: m.fallbacks.clone(),
            input: m.input.clone(),
            max_image_bytes: m.max_image_bytes,
            max_images: m.max_images,
        }
    }
}

/// The models the caller's role may use.
#[utoipa::path(get, path = "/api/models", tag = "me",
    responses((status = 200, description = "The models the caller may use", body = ModelList),
    (status = 503, description = "The database is unreachable", body = crate::error::ErrorBody)))]
async fn list(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let access = RoleModels::of(&mut conn, &who.role).await?;
    drop(conn);
    let catalogue = &state.catalogue.now();
    let default = catalogue.pick_for(&access.models, None).map(str::to_owned);
    let allowed: Vec<_> = catalogue.allowed(&access.models).collect();
    Ok(HttpResponse::Ok().json(ModelList {
        provider: default
            .as_deref()
            .and_then(|d| catalogue.get(d))
            .map(|m| m.kind),
        default,
        models: allowed.iter().map(|m| m.name.clone()).collect(),
        details: allowed.iter().map(|m| ModelInfo::of(m)).collect(),
    }))
}
