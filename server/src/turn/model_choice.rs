//! Which catalogue model a turn runs on, its limits and, under a money budget, its price:
//! what a turn's start and each step ask of the catalogue.

use super::engine::TurnEngine;
use super::error::TurnError;
use super::sql as turn_db;

impl TurnEngine {
    /// The conversation's model (the catalogue's default when it names none), if the
    /// catalogue still offers it and the user's role may use it.
    pub(crate) fn model_allowed(
        &self,
        conversation: &crate::db::models::conversation::Conversation,
        role: &crate::turn::sql::RoleNow,
    ) -> Result<std::sync::Arc<crate::llm::CatalogueModel>, TurnError> {
        let catalogue = self.catalogue.now();
        let name = conversation
            .model
            .as_deref()
            .unwrap_or(catalogue.default_model());
        let Some(model) = catalogue.get(name) else {
            return Err(TurnError::ModelUnavailable(name.to_owned()));
        };
        if !crate::llm::catalogue::allows(&role.models, name) {
            return Err(TurnError::ModelNotAllowed {
                model: name.to_owned(),
                role: role.name.clone(),
            });
        }
        Ok(model.clone())
    }

    /// The output cap and context window of the model named `name` (`[llm]`'s when the
    /// catalogue no longer has it).
    pub(crate) fn limits_of(&self, name: &str) -> (u64, u32) {
        self.catalogue.now().get(name).map_or(
            (
                self.settings.context_window_tokens,
                self.settings.max_output_tokens,
            ),
            |m| (m.context_window, m.max_output),
        )
    }
}

/// The model's price in force; under a money budget the model must have one in the budget's
/// currency (never a guessed price).
pub(super) fn priced_for(
    opened: &turn_db::Opened<'_>,
    model: &crate::llm::CatalogueModel,
) -> Result<Option<crate::domain::pricing::Price>, TurnError> {
    let price = model.price_at(chrono::Utc::now());
    match opened.money_budget() {
        Some(budget) if price.as_ref().is_none_or(|p| p.currency != budget.currency) => {
            Err(TurnError::ModelUnpriced {
                model: model.name.clone(),
                currency: budget.currency.clone(),
            })
        }
        _ => Ok(price),
    }
}
