//! What the admin API may change in the catalogue at run time, and what every change shares:
//! providers here, models in [`super::edit_models`]. Each change is checked against the whole
//! catalogue, stored with its admin-trail row in one transaction, then the catalogue is
//! rebuilt here and every other process is told ([`super::edit_write`]). Keys are write-only: never answered, never
//! in the trail; an edit that moves a provider to another origin must send its key again.
//! The configuration's entries are refused ([`CatalogueError::Configured`]).

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::entry::{Entry, EntryKind};
use super::{Catalogue, CatalogueError, Source};
use crate::config::catalogue::check_provider;
use crate::config::{ProviderConfig, ProviderKind};
use crate::db::models::admin_change::NewChange;
use crate::domain::Actor;

/// A provider as the API takes it. On PUT an absent `api_key` keeps the stored one (while
/// the provider stays on the same origin); `""` removes it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderBody {
    pub name: Option<String>,
    pub kind: ProviderKind,
    #[serde(default)]
    pub base_url: String,
    pub api_key: Option<String>,
    pub connect_timeout_secs: Option<u64>,
    pub first_byte_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
}

fn provider_of(
    name: &str,
    body: ProviderBody,
    existing: Option<&ProviderConfig>,
) -> Result<ProviderConfig, CatalogueError> {
    let base_url = body.base_url.trim().trim_end_matches('/').to_owned();
    let api_key = match (body.api_key, existing) {
        (Some(k), _) => Some(k).filter(|k| !k.is_empty()).map(SecretString::from),
        (None, Some(e))
            if e.api_key.is_some()
                && (e.kind != body.kind
                    || !same_origin(
                        &effective(e.kind, &e.base_url),
                        &effective(body.kind, &base_url),
                    )) =>
        {
            return Err(CatalogueError::KeyRequired);
        }
        (None, Some(e)) => e.api_key.clone(),
        (None, None) => None,
    };
    let p = ProviderConfig {
        name: name.to_owned(),
        kind: body.kind,
        base_url,
        api_key,
        connect_timeout_secs: body.connect_timeout_secs,
        first_byte_timeout_secs: body.first_byte_timeout_secs,
        idle_timeout_secs: body.idle_timeout_secs,
        request_timeout_secs: body.request_timeout_secs,
        max_retries: body.max_retries,
    };
    check_provider(&p).map_err(|message| invalid("invalid_provider", message))?;
    Ok(p)
}

pub(super) fn invalid(code: &'static str, message: impl Into<String>) -> CatalogueError {
    CatalogueError::Invalid {
        code,
        message: message.into(),
    }
}

pub(super) fn conflict(code: &'static str, message: impl Into<String>) -> CatalogueError {
    CatalogueError::Conflict {
        code,
        message: message.into(),
    }
}

/// The URL requests go to: the configured one, or the vendor's.
fn effective(kind: ProviderKind, base_url: &str) -> String {
    match base_url {
        "" => kind.vendor_base_url().to_owned(),
        url => url.to_owned(),
    }
}

/// Whether two base URLs share scheme, host and port (unparsable ones never do).
fn same_origin(a: &str, b: &str) -> bool {
    let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin());
    match (origin(a), origin(b)) {
        (Some(a), Some(b)) => a.is_tuple() && a == b,
        _ => false,
    }
}

/// The base URL requests go to, shown without credentials ([`crate::domain::shown_url`]).
pub fn shown_base_url(kind: ProviderKind, configured: &str) -> String {
    match configured.trim().trim_end_matches('/') {
        "" => crate::domain::shown_url(kind.vendor_base_url()),
        url => crate::domain::shown_url(url),
    }
}

/// A provider as the admin trail keeps it: whether a key is set, never the key, nor a
/// password in the URL.
fn provider_trail(p: &ProviderConfig) -> Value {
    json!({
        "name": p.name, "kind": p.kind, "base_url": shown_base_url(p.kind, &p.base_url),
        "api_key_set": p.api_key.is_some(),
        "connect_timeout_secs": p.connect_timeout_secs, "first_byte_timeout_secs": p.first_byte_timeout_secs,
        "idle_timeout_secs": p.idle_timeout_secs, "request_timeout_secs": p.request_timeout_secs,
        "max_retries": p.max_retries,
    })
}

fn same_key(a: &ProviderConfig, b: &ProviderConfig) -> bool {
    let key = |p: &ProviderConfig| p.api_key.as_ref().map(|k| k.expose_secret().to_owned());
    key(a) == key(b)
}

/// What a change stores.
#[derive(Clone, Copy)]
pub(super) enum Store<'a> {
    Insert(Entry<'a>),
    Update(Entry<'a>),
    Delete(EntryKind, &'a str),
}

impl Catalogue {
    /// The provider the admin API owns; not found, or configured.
    fn owned_provider(&self, name: &str) -> Result<ProviderConfig, CatalogueError> {
        let catalogue = self.now();
        match catalogue.providers().iter().find(|(p, _)| p.name == name) {
            None => Err(CatalogueError::NotFound("provider")),
            Some((_, Source::Config)) => Err(CatalogueError::configured("provider", name)),
            Some((p, Source::Api)) => Ok(p.clone()),
        }
    }

    /// Adds a provider (`POST /api/admin/providers`); the provider as stored.
    pub async fn create_provider(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        body: ProviderBody,
    ) -> Result<ProviderConfig, CatalogueError> {
        let name = body
            .name
            .clone()
            .ok_or_else(|| invalid("invalid_provider", "name is required"))?;
        let provider = provider_of(&name, body, None)?;
        let exists = self.now().providers().iter().any(|(p, _)| p.name == name);
        if exists {
            return Err(conflict(
                "provider_exists",
                format!("a provider named `{name}` exists"),
            ));
        }
        let mut conn = crate::db::conn(pool).await?;
        let change =
            NewChange::by(admin, "provider.create", &name).after(provider_trail(&provider));
        let store = Store::Insert(Entry::Provider(&provider));
        self.commit(&mut conn, store, change)
            .await
            .map_err(|e| exists_or(e, "provider_exists", &name))?;
        Ok(provider)
    }

    /// Replaces a provider the admin API owns (`PUT /api/admin/providers/{name}`).
    pub async fn replace_provider(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        name: &str,
        body: ProviderBody,
    ) -> Result<ProviderConfig, CatalogueError> {
        if body.name.as_deref().is_some_and(|n| n != name) {
            return Err(invalid(
                "invalid_provider",
                "the name in the body differs from the path; providers cannot be renamed",
            ));
        }
        let current = self.owned_provider(name)?;
        let provider = provider_of(name, body, Some(&current))?;
        let mut after = provider_trail(&provider);
        if !same_key(&current, &provider) {
            after["api_key_changed"] = json!(true);
        }
        let change = NewChange::by(admin, "provider.update", name)
            .before(provider_trail(&current))
            .after(after);
        let mut conn = crate::db::conn(pool).await?;
        let store = Store::Update(Entry::Provider(&provider));
        self.commit(&mut conn, store, change).await?;
        Ok(provider)
    }

    /// Removes a provider the admin API owns and no model uses
    /// (`DELETE /api/admin/providers/{name}`).
    pub async fn delete_provider(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        name: &str,
    ) -> Result<(), CatalogueError> {
        let current = self.owned_provider(name)?;
        let users: Vec<String> = {
            let c = self.now();
            c.models()
                .iter()
                .filter(|m| m.provider == name)
                .map(|m| m.name.clone())
                .collect()
        };
        if !users.is_empty() {
            return Err(conflict(
                "provider_in_use",
                format!(
                    "models use `{name}`: {}; remove them first",
                    users.join(", ")
                ),
            ));
        }
        let change = NewChange::by(admin, "provider.delete", name).before(provider_trail(&current));
        let mut conn = crate::db::conn(pool).await?;
        let store = Store::Delete(EntryKind::Provider, name);
        self.commit(&mut conn, store, change).await
    }
}

/// A lost race on insert is the name being taken.
pub(super) fn exists_or(e: CatalogueError, code: &'static str, name: &str) -> CatalogueError {
    match e {
        CatalogueError::Changed => conflict(code, format!("`{name}` exists")),
        e => e,
    }
}
