//! What a turn may do, decided once at its start and renewed at each step's re-read of the
//! role: the model (its price is read at each reservation, as it is charged), the role narrowed by the assistant and the key's scopes,
//! the tools offered (ours and an API client's), the sampling and the output cap. The step
//! asks the plan, never the pieces: a new capability (a code interpreter, images, web
//! search) adds its part here and its work in `step/`.
//!
//! A leaf of the turn: it imports neither the engine nor the step.

use std::sync::Arc;
use std::time::Duration;

use crate::db::models::conversation::Conversation;
use crate::domain::pricing::Price;
use crate::domain::KeyScopes;
use crate::llm::{self, ChatMessage, ChatRequest, ToolChoice, ToolSpec};
use crate::tools::Registry;
use crate::turn::error::TurnError;
use crate::turn::sql::preset::{output_cap, AssistantPreset};
use crate::turn::sql::RoleNow;

/// How long a turn may still be storing itself after its deadline (the final store's
/// minimum window and room to spare). A turn's claim on its conversation and its budget
/// holds outlive the deadline by this much, so that nobody takes them over while the turn
/// is still writing.
pub const STORE_GRACE: Duration = Duration::from_secs(120);

/// The turn's plan: what it may call and with what.
pub(crate) struct Plan {
    /// The catalogue model the turn asks for (a fallback may answer instead).
    pub model: String,
    /// The role as the last commit read it, narrowed by the assistant.
    pub role: RoleNow,
    /// Built-in tools plus the admin-defined ones as they were when the turn started,
    /// within the key's scopes.
    pub tools: Registry,
    /// Tools of an API client: offered to the model, and handed back to the client when
    /// called, never run here ([`crate::turn::api`]).
    pub client_tools: Vec<ToolSpec>,
    /// The conversation's assistant as the start read it: its tools narrow the role each
    /// time the role is read again, its parameters shape every call.
    pub assistant: Option<Arc<AssistantPreset>>,
}

impl Plan {
    /// The plan of a turn whose `role` is already narrowed by its assistant.
    pub fn new(
        model: String,
        role: RoleNow,
        tools: Registry,
        assistant: Option<Arc<AssistantPreset>>,
    ) -> Self {
        Self {
            model,
            role,
            tools,
            client_tools: Vec::new(),
            assistant,
        }
    }

    /// The role as a step's commit read it again, narrowed by the assistant as at the start.
    pub fn renarrow(&mut self, role_now: RoleNow) {
        self.role = role_now.narrowed(self.assistant.as_deref());
    }

    /// Whether the role (as last read) may use `model`.
    pub fn allows(&self, model: &str) -> bool {
        crate::catalogue::allows(&self.role.models, model)
    }

    /// The tools offered to the model: ours the role allows, except those a client tool of
    /// the same name replaces, and the client's.
    pub fn offered_tools(&self) -> Vec<ToolSpec> {
        with_client_tools(offered(&self.tools, &self.role.tools), &self.client_tools)
    }

    /// The next model call's request.
    pub fn request(&self, messages: Vec<ChatMessage>, max_tokens: u32) -> ChatRequest {
        ChatRequest {
            model: self.model.clone(),
            messages,
            tools: self.offered_tools(),
            tool_choice: ToolChoice::Auto,
            max_tokens: Some(max_tokens),
            temperature: self
                .assistant
                .as_ref()
                .and_then(|a| a.params.temperature)
                .map(|t| t as f32),
        }
    }

    /// Our count of a call's input tokens under this plan ([`count_input`]).
    pub fn count_input(&self, messages: &[ChatMessage]) -> u64 {
        count_input(messages, &self.role.tools, &self.tools)
    }

    /// The input estimate a reservation is made for, with the safety margin.
    pub fn estimate_input(&self, messages: &[ChatMessage]) -> i64 {
        crate::budget::with_margin(self.count_input(messages))
    }

    /// The output cap of a call of a model whose own cap is `model_max`: the assistant may
    /// lower it.
    pub fn output_cap(&self, model_max: u32) -> u32 {
        output_cap(self.assistant.as_deref(), model_max)
    }

    /// `Some(the client's calls)` when the model called any client tool. The server's calls
    /// of the same message are dropped rather than run: their results could not reach the
    /// model (the client answers only its own calls), and the model may ask again.
    pub fn handed_back(&self, calls: &[llm::ToolCall]) -> Option<Vec<llm::ToolCall>> {
        client_calls(&self.client_tools, calls)
    }

    /// Whether the turn's answer may title its conversation (API calls carry their own).
    pub fn may_title(&self) -> bool {
        self.client_tools.is_empty()
    }
}

/// At a turn's start: the assistant's model wins over the conversation's; its tools narrow
/// the role's, never widen them.
pub(crate) fn narrow_to_assistant(
    conversation: &mut Conversation,
    role: &mut RoleNow,
    assistant: &AssistantPreset,
) {
    if assistant.model.is_some() {
        conversation.model.clone_from(&assistant.model);
    }
    role.narrow_to(&assistant.tools);
}

/// The conversation's model (the catalogue's default when it names none), if the catalogue
/// still offers it and the user's role may use it.
pub(crate) fn model_for(
    catalogue: &crate::catalogue::Snapshot,
    conversation: &Conversation,
    role: &RoleNow,
) -> Result<Arc<crate::catalogue::CatalogueModel>, TurnError> {
    let name = conversation
        .model
        .as_deref()
        .unwrap_or(catalogue.default_model());
    let Some(model) = catalogue.get(name) else {
        return Err(TurnError::ModelUnavailable(name.to_owned()));
    };
    if !crate::catalogue::allows(&role.models, name) {
        return Err(TurnError::ModelNotAllowed {
            model: name.to_owned(),
            role: role.name.clone(),
        });
    }
    Ok(model.clone())
}

/// The model's price in force; under a money budget (`budget_currency`) the model must have
/// one in the budget's currency (never a guessed price).
pub(crate) fn priced_for(
    model: &crate::catalogue::CatalogueModel,
    budget_currency: Option<&str>,
) -> Result<Option<Price>, TurnError> {
    let price = model.price_at(chrono::Utc::now());
    match budget_currency {
        Some(currency) if price.as_ref().is_none_or(|p| p.currency != currency) => {
            Err(TurnError::ModelUnpriced {
                model: model.name.clone(),
                currency: currency.to_owned(),
            })
        }
        _ => Ok(price),
    }
}

/// The output cap and context window of the model named `name` (`[llm]`'s when the
/// catalogue no longer has it).
pub(crate) fn limits_of(
    catalogue: &crate::catalogue::Snapshot,
    settings: &crate::config::LlmSettings,
    name: &str,
) -> (u64, u32) {
    catalogue.get(name).map_or(
        (settings.context_window_tokens, settings.max_output_tokens),
        |m| (m.context_window, m.max_output),
    )
}

/// The output cap a reservation leaves room for.
pub(crate) fn clamp_output(room: i64, max_output: i64) -> u32 {
    u32::try_from(room.clamp(1, max_output.max(1))).unwrap_or(u32::MAX)
}

/// The tools a key with `scopes` may use (all of them for an access token): those that
/// reach the owner's data only with their scope (`files`, `knowledge`, `memory`). A call of
/// a tool left out is refused as `not_permitted`, naming the scope.
pub(crate) fn within_scopes(tools: Registry, scopes: Option<KeyScopes>) -> Registry {
    match scopes {
        Some(s) => tools.within_key_scopes(s),
        None => tools,
    }
}

/// Our count of a call's input tokens: the messages and the offered tools' schemas (what
/// is charged when the provider reports no usage).
pub(crate) fn count_input(input: &[ChatMessage], allowed: &[String], tools: &Registry) -> u64 {
    let messages: u64 = input.iter().map(crate::turn::context::cost).sum();
    let tools: u64 = tools
        .allowed_specs(allowed)
        .map(|(s, schema_chars)| {
            llm::estimate_tokens_of_chars(schema_chars) + llm::estimate_tokens(&s.description)
        })
        .sum();
    messages + tools
}

/// The tools registered and allowed for the user's role, as the model is offered them.
fn offered(tools: &Registry, allowed: &[String]) -> Vec<ToolSpec> {
    tools
        .allowed_specs(allowed)
        .map(|(s, _)| ToolSpec {
            name: s.name.clone(),
            description: s.description.clone(),
            parameters: s.parameters.clone(),
        })
        .collect()
}

/// The server's offered tools, except those a client tool of the same name replaces, and
/// the client's.
fn with_client_tools(mut offered: Vec<ToolSpec>, client: &[ToolSpec]) -> Vec<ToolSpec> {
    if client.is_empty() {
        return offered;
    }
    offered.retain(|s| !client.iter().any(|c| c.name == s.name));
    offered.extend(client.iter().cloned());
    offered
}

fn client_calls(client: &[ToolSpec], calls: &[llm::ToolCall]) -> Option<Vec<llm::ToolCall>> {
    let theirs: Vec<llm::ToolCall> = calls
        .iter()
        .filter(|c| client.iter().any(|t| t.name == c.name))
        .cloned()
        .collect();
    (!theirs.is_empty()).then_some(theirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    fn call(name: &str) -> llm::ToolCall {
        llm::ToolCall {
            id: format!("id-{name}"),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn client_tools_replace_server_tools_of_the_same_name() {
        let offered = with_client_tools(
            vec![spec("calculator"), spec("read_file")],
            &[spec("read_file"), spec("open_tab")],
        );
        let names: Vec<_> = offered.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["calculator", "read_file", "open_tab"]);
    }

    #[test]
    fn only_a_message_calling_a_client_tool_is_handed_back() {
        let client = [spec("open_tab")];
        assert!(client_calls(&client, &[call("calculator")]).is_none());
        let mixed = client_calls(&client, &[call("calculator"), call("open_tab")]).unwrap();
        assert_eq!(mixed.len(), 1);
        assert_eq!(mixed[0].name, "open_tab");
        assert!(client_calls(&[], &[call("open_tab")]).is_none());
    }
}
