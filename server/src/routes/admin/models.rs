//! `GET /api/admin/models`: the model catalogue as an admin reviews it: every provider (its
//! key only as "set" or not, its circuit breaker), every model with its whole price table,
//! the price in force and the roles that may use it. The providers and models the admin API
//! owns are added, changed and removed in [`super::catalogue_edit`]; the configuration's are
//! read-only here.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;

use crate::auth::AdminUser;
use crate::catalogue::breaker::{BreakerState, BreakerView, Breakers};
use crate::catalogue::{allows, CatalogueModel, Source};
use crate::config::{InputKind, PriceConfig, ProviderConfig, ProviderKind};
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::routes::models::PriceView;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    use super::{catalogue_edit as edit, catalogue_models as models_edit};
    cfg.service(
        web::resource("/models")
            .route(web::get().to(list))
            .route(web::post().to(models_edit::create_model)),
    )
    .service(
        web::resource("/models/{name}")
            .route(web::put().to(models_edit::replace_model))
            .route(web::delete().to(models_edit::delete_model)),
    )
    .service(web::resource("/providers").route(web::post().to(edit::create_provider)))
    .service(
        web::resource("/providers/{name}")
            .route(web::put().to(edit::replace_provider))
            .route(web::delete().to(edit::delete_provider)),
    );
}

/// `GET /api/admin/models`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminCatalogue {
    /// In configuration order (`default` alone when only `[llm]` is configured).
    pub providers: Vec<ProviderInfo>,
    /// In configuration order.
    pub models: Vec<AdminModel>,
}

/// One upstream endpoint.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ProviderInfo {
    pub name: String,
    pub kind: ProviderKind,
    /// The endpoint requests go to (the vendor's when none is configured; empty for the
    /// demo), without any user name or password it may carry.
    pub base_url: String,
    /// Whether an API key is configured (the key itself is never shown).
    pub api_key_set: bool,
    /// `config` (changed in the configuration) or `api` (editable here).
    pub source: Source,
    /// Unset: `[llm]`'s.
    pub connect_timeout_secs: Option<u64>,
    pub first_byte_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    /// Its circuit breaker as this process sees it (every process shares opening and
    /// closing through the database).
    pub breaker: BreakerView,
}

/// One model of the catalogue.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminModel {
    /// The public name conversations and role lists use.
    pub name: String,
    /// The provider entry serving it.
    pub provider: String,
    pub kind: ProviderKind,
    /// The provider's id of the model.
    pub upstream_model: String,
    pub context_window: u64,
    pub max_output: u32,
    /// Every configured price, oldest first.
    pub prices: Vec<PriceRow>,
    /// The price per million tokens in force now (null: none has started, or unpriced).
    pub price_in_force: Option<PriceView>,
    /// No price is configured: the model can never be used under a money budget.
    pub unpriced: bool,
    /// Models that answer, in order, when this one fails before its first token.
    pub fallbacks: Vec<String>,
    /// What it reads: `["text"]` or `["text", "image"]`.
    pub input: Vec<InputKind>,
    /// Largest image one request may give it, in bytes.
    pub max_image_bytes: u64,
    /// Most images one request may give it.
    pub max_images: u32,
    /// The roles whose `models` list allows it (by name or `*`), by name.
    pub roles: Vec<String>,
    /// `config` (changed in the configuration) or `api` (editable here).
    pub source: Source,
}

/// One row of a model's price table, per million tokens, as exact decimal strings.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PriceRow {
    /// When it starts to apply (null: always).
    pub effective_from: Option<DateTime<Utc>>,
    pub currency: String,
    pub input: String,
    pub output: String,
    /// The input price when not configured apart.
    pub cache_read: String,
    /// The input price when not configured apart.
    pub cache_write: String,
}

/// The whole catalogue with the roles that may use each model.
#[utoipa::path(get, path = "/api/admin/models", tag = "admin",
    responses((status = 200, description = "Providers and models", body = AdminCatalogue)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let roles = role::list(&mut conn).await?;
    drop(conn);
    let now = Utc::now();
    let catalogue = state.catalogue.now();
    let models = catalogue
        .models()
        .iter()
        .map(|m| model_info(m, &roles, now))
        .collect();
    Ok(HttpResponse::Ok().json(AdminCatalogue {
        providers: catalogue
            .providers()
            .iter()
            .map(|(p, source)| provider_info(p, *source, state.catalogue.breakers()))
            .collect(),
        models,
    }))
}

/// One provider as the admin view shows it: its key only as set or not.
pub(super) fn provider_info(
    p: &ProviderConfig,
    source: Source,
    breakers: &Breakers,
) -> ProviderInfo {
    let breaker = breakers
        .get(&p.name)
        .map(|b| b.view())
        .unwrap_or(BreakerView {
            state: BreakerState::Closed,
            consecutive_failures: 0,
            open_until: None,
            last_error: None,
        });
    ProviderInfo {
        name: p.name.clone(),
        kind: p.kind,
        base_url: shown_url(p.kind, &p.base_url),
        api_key_set: p.api_key.is_some(),
        source,
        connect_timeout_secs: p.connect_timeout_secs,
        first_byte_timeout_secs: p.first_byte_timeout_secs,
        idle_timeout_secs: p.idle_timeout_secs,
        request_timeout_secs: p.request_timeout_secs,
        max_retries: p.max_retries,
        breaker,
    }
}

/// The base URL requests go to, shown without credentials ([`crate::domain::shown_url`]).
pub(super) fn shown_url(kind: ProviderKind, configured: &str) -> String {
    crate::catalogue::edit::shown_base_url(kind, configured)
}

pub(super) fn model_info(
    m: &CatalogueModel,
    roles: &[role::Role],
    now: DateTime<Utc>,
) -> AdminModel {
    AdminModel {
        name: m.name.clone(),
        provider: m.provider.clone(),
        kind: m.kind,
        upstream_model: m.upstream_model.clone(),
        context_window: m.context_window,
        max_output: m.max_output,
        prices: m.prices().iter().map(price_row).collect(),
        price_in_force: m.price_at(now).map(|p| PriceView {
            currency: p.currency,
            input: exact(p.input),
            output: exact(p.output),
            cache_read: exact(p.cache_read),
            cache_write: exact(p.cache_write),
        }),
        unpriced: !m.is_priced(),
        fallbacks: m.fallbacks.clone(),
        input: m.input.clone(),
        max_image_bytes: m.max_image_bytes,
        max_images: m.max_images,
        roles: roles
            .iter()
            .filter(|r| allows(&r.models, &m.name))
            .map(|r| r.name.clone())
            .collect(),
        source: m.source,
    }
}

fn price_row(p: &PriceConfig) -> PriceRow {
    PriceRow {
        effective_from: p.effective_from,
        currency: p.currency.clone(),
        input: exact(p.input),
        output: exact(p.output),
        cache_read: exact(p.cache_read.unwrap_or(p.input)),
        cache_write: exact(p.cache_write.unwrap_or(p.input)),
    }
}

/// A decimal without trailing zeros (`3.00` -> `3`), as `/api/models` writes it.
fn exact(d: Decimal) -> String {
    d.normalize().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_carry_no_credentials() {
        assert_eq!(
            shown_url(ProviderKind::Openai, "https://user:pw@llm.example.com/v1/"),
            "https://llm.example.com/v1"
        );
        assert_eq!(
            shown_url(ProviderKind::Anthropic, ""),
            "https://api.anthropic.com"
        );
        assert_eq!(shown_url(ProviderKind::Demo, ""), "");
    }
}
