//! Assistants on `/v1`: the model name `assistant:<name>` runs a turn with that assistant
//! (its instructions, model, tools ∩ the caller's role, collections), under the caller's
//! budget, approvals and audit like any call, and `/v1/models` lists the ones the caller's
//! role sees.

use uuid::Uuid;

use super::error::OpenAiError;
use crate::assistants::{Assistant, API_MODEL_PREFIX};
use crate::error::ApiError;
use crate::state::AppState;

/// The assistant a request's model names, for a caller of `role`: `Ok(None)` when the model
/// is not an assistant's name; 404 (as for any unknown model) when no assistant of that
/// name is visible to the role. The name as listed (spaces as `-`) and as written both do.
pub async fn named(
    state: &AppState,
    role: &str,
    model: &str,
) -> Result<Option<Assistant>, OpenAiError> {
    let Some(name) = model.strip_prefix(API_MODEL_PREFIX) else {
        return Ok(None);
    };
    if !crate::assistants::spec::valid_name(name) {
        return Err(OpenAiError::unknown_model(model));
    }
    let mut conn = crate::db::conn(&state.pool).await.map_err(ApiError::from)?;
    let exact = crate::assistants::store::by_name(&mut conn, name)
        .await
        .map_err(ApiError::from)?;
    let found = match exact {
        Some(a) => Some(a),
        None => crate::assistants::store::by_api_name(&mut conn, name)
            .await
            .map_err(ApiError::from)?,
    }
    .filter(|a| a.visible_to(role));
    found
        .map(Some)
        .ok_or_else(|| OpenAiError::unknown_model(model))
}

/// The catalogue model an assistant's turn runs on.
pub fn model_of(state: &AppState, assistant: &Assistant) -> String {
    assistant
        .model
        .clone()
        .unwrap_or_else(|| state.catalogue.now().default_model().to_owned())
}

/// The `/v1` model names of the assistants a user of `role` sees whose model the role may
/// use, each with its id and the catalogue model it answers with.
pub async fn listed(
    state: &AppState,
    role: &str,
    allowed: &[String],
) -> Result<Vec<(String, Uuid, String)>, ApiError> {
    let mut conn = crate::db::conn(&state.pool).await?;
    let visible = crate::assistants::store::visible_to(&mut conn, role).await?;
    Ok(visible
        .into_iter()
        .filter_map(|a| {
            let model = model_of(state, &a);
            allowed.contains(&model).then(|| {
                let name = crate::assistants::spec::api_name(&a.name);
                (format!("{API_MODEL_PREFIX}{name}"), a.id, model)
            })
        })
        .collect())
}
