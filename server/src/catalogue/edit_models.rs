//! The models the admin API owns, checked against the whole catalogue (their provider and
//! fallbacks must be in it), stored and audited like providers ([`super::edit`]).

use super::edit::{conflict, exists_or, invalid, Store};
use super::entry::{Entry, EntryKind};
use super::{Catalogue, CatalogueError, Source};
use crate::config::catalogue::check_model;
use crate::config::ModelConfig;
use crate::db::models::admin_change::NewChange;
use crate::domain::Actor;

impl Catalogue {
    /// Checks `m` against the catalogue: its provider and fallbacks must be in it.
    fn check_against_catalogue(&self, m: &ModelConfig) -> Result<(), CatalogueError> {
        let catalogue = self.now();
        let provider_exists = catalogue
            .providers()
            .iter()
            .any(|(p, _)| p.name == m.provider);
        let model_exists = |f: &str| catalogue.get(f).is_some();
        check_model(m, &self.settings().llm, provider_exists, &model_exists)
            .map_err(|message| invalid("invalid_model", message))
    }

    /// The model the admin API owns; not found, or configured.
    fn owned_model(&self, name: &str) -> Result<ModelConfig, CatalogueError> {
        let catalogue = self.now();
        let Some(m) = catalogue.get(name) else {
            return Err(CatalogueError::NotFound("model"));
        };
        if m.source == Source::Config {
            return Err(CatalogueError::configured("model", name));
        }
        Ok(ModelConfig {
            name: m.name.clone(),
            provider: m.provider.clone(),
            upstream_model: m.upstream_model.clone(),
            context_window: Some(m.context_window),
            max_output: Some(m.max_output),
            prices: m.prices().to_vec(),
            fallbacks: m.fallbacks.clone(),
            input: Some(m.input.clone()),
            max_image_bytes: Some(m.max_image_bytes),
            max_images: Some(m.max_images),
        })
    }

    /// Adds a model (`POST /api/admin/models`).
    pub async fn create_model(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        model: &ModelConfig,
    ) -> Result<(), CatalogueError> {
        self.check_against_catalogue(model)?;
        if self.now().get(&model.name).is_some() {
            return Err(conflict(
                "model_exists",
                format!("a model named `{}` exists", model.name),
            ));
        }
        let trail = serde_json::to_value(model).unwrap_or_default();
        let change = NewChange::by(admin, "model.create", &model.name).after(trail);
        let mut conn = crate::db::conn(pool).await?;
        self.commit(&mut conn, Store::Insert(Entry::Model(model)), change)
            .await
            .map_err(|e| exists_or(e, "model_exists", &model.name))
    }

    /// Replaces a model the admin API owns (`PUT /api/admin/models/{name}`).
    pub async fn replace_model(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        name: &str,
        model: &ModelConfig,
    ) -> Result<(), CatalogueError> {
        if model.name != name {
            return Err(invalid(
                "invalid_model",
                "the name in the body differs from the path; models cannot be renamed",
            ));
        }
        let current = self.owned_model(name)?;
        self.check_against_catalogue(model)?;
        let change = NewChange::by(admin, "model.update", name)
            .before(serde_json::to_value(&current).unwrap_or_default())
            .after(serde_json::to_value(model).unwrap_or_default());
        let mut conn = crate::db::conn(pool).await?;
        self.commit(&mut conn, Store::Update(Entry::Model(model)), change)
            .await
    }

    /// Removes a model the admin API owns that is no other model's fallback
    /// (`DELETE /api/admin/models/{name}`).
    pub async fn delete_model(
        &self,
        pool: &crate::db::Pool,
        admin: &impl Actor,
        name: &str,
    ) -> Result<(), CatalogueError> {
        let current = self.owned_model(name)?;
        let backed: Vec<String> = {
            let c = self.now();
            c.models()
                .iter()
                .filter(|m| m.fallbacks.iter().any(|f| f == name))
                .map(|m| m.name.clone())
                .collect()
        };
        if !backed.is_empty() {
            return Err(conflict(
                "model_in_use",
                format!(
                    "`{name}` is the fallback of {}; change them first",
                    backed.join(", ")
                ),
            ));
        }
        let change = NewChange::by(admin, "model.delete", name)
            .before(serde_json::to_value(&current).unwrap_or_default());
        let mut conn = crate::db::conn(pool).await?;
        let store = Store::Delete(EntryKind::Model, name);
        self.commit(&mut conn, store, change).await
    }
}
