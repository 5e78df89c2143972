//! Turns of the OpenAI-compatible API. Each call is stored as a new conversation of its
//! caller: the request's earlier messages first, then the turn as usual (the last message
//! is its new message, a user prompt or the client's tool results). The model sees exactly
//! the request's messages after the server's system prompt; the client's own tools are
//! offered next to the server's, and a model message that calls one ends the turn with
//! those calls handed back (`finish_reason: tool_calls`), never run here.

use crate::auth::SignedToken;
use crate::budget;
use crate::db::models::conversation::Conversation;
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::message::{Message, NewMessage};
use crate::domain::KeyScopes;
use crate::llm::{self, ChatMessage, ToolSpec};
use crate::tools::Registry;
use crate::turn::context::StoredToolCall;
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::error::TurnError;
use crate::turn::events::{ToolCallEvent, TurnEvent};
use crate::turn::follow::Follower;
use crate::turn::sql as turn_db;
use uuid::Uuid;

/// The tools a key with `scopes` may use (all of them for an access token): those that
/// reach the owner's data only with their scope (`files`, `knowledge`, `memory`). A call of
/// a tool left out is refused as `not_permitted`, naming the scope.
pub(crate) fn within_scopes(tools: Registry, scopes: Option<KeyScopes>) -> Registry {
    match scopes {
        Some(s) => tools.within_key_scopes(s),
        None => tools,
    }
}

/// A call of the API, translated into the agent's terms.
#[derive(Debug, Clone)]
pub struct ApiTurn {
    /// A model the server offers.
    pub model: String,
    pub title: String,
    /// The request's messages before the last one (instructions aside), stored first.
    pub history: Vec<NewMessage>,
    /// The last message: the turn's new message.
    pub last: NewMessage,
    /// The model's input after the server's system prompt (and the assistant's instructions).
    pub input: Vec<ChatMessage>,
    pub client_tools: Vec<ToolSpec>,
    /// The caller's key's scopes (`None`: an access token): the turn is neither offered nor
    /// able to run a tool whose scope the key lacks.
    pub key_scopes: Option<KeyScopes>,
    /// The assistant the call named as its model (`assistant:<name>`), resolved by the route.
    pub assistant_id: Option<Uuid>,
}

impl TurnEngine {
    /// Runs one `/v1` call as a turn of its caller (`api_key`: the key it came with),
    /// followed from its start (this file).
    pub async fn send_api(
        &self,
        token: SignedToken,
        api_key: Option<Uuid>,
        call: ApiTurn,
    ) -> Result<Follower, TurnError> {
        let prepared = self.prepare_api(token, api_key, call).await?;
        let (user_id, conversation_id) = (prepared.user_id, prepared.conversation_id);
        let log = self.spawn(prepared);
        Ok(self.follow_started(user_id, conversation_id, log))
    }

    /// Prepares the call's turn (budget, tools) as [`TurnEngine::prepare`] does, creating its
    /// conversation and storing the earlier messages in the same transaction: the commits
    /// of a plain turn, and a refused turn leaves no conversation behind.
    pub(crate) async fn prepare_api(
        &self,
        token: SignedToken,
        api_key: Option<uuid::Uuid>,
        call: ApiTurn,
    ) -> Result<PreparedTurn, TurnError> {
        let ApiTurn {
            model,
            title,
            mut history,
            mut last,
            input,
            client_tools,
            key_scopes,
            assistant_id,
        } = call;
        let id = uuid::Uuid::new_v4();
        for m in history.iter_mut().chain(std::iter::once(&mut last)) {
            m.conversation_id = id;
        }
        let origin = crate::turn::start::Origin {
            new_conversation: Some(turn_db::NewConversation {
                title,
                model: Some(model),
                history,
                key_scopes,
                assistant_id,
            }),
            api_key,
            ..Default::default()
        };
        let build = self.api_input(input, &client_tools, key_scopes);
        self.prepare_turn(token, last, origin, 0, build, client_tools)
            .await
    }

    /// The input builder of an API turn: the server's system prompt, then the request's
    /// messages as they came (the stored history is not read back).
    // The builder's signature is `prepare_turn`'s bound, spelled out.
    #[allow(clippy::type_complexity)]
    fn api_input(
        &self,
        input: Vec<ChatMessage>,
        client_tools: &[ToolSpec],
        key_scopes: Option<KeyScopes>,
    ) -> impl FnOnce(
        &Conversation,
        &llm::CatalogueModel,
        &[Message],
        &[String],
        &[CustomToolRow],
        &crate::turn::sql::preset::TurnPreset,
    ) -> (crate::turn::start::Built, i64)
           + Send
           + 'static {
        let agent = self.clone();
        let client_cost: u64 = client_tools
            .iter()
            .map(|t| {
                llm::estimate_tokens(&t.name)
                    + llm::estimate_tokens(&t.description)
                    + llm::estimate_tokens(&t.parameters.to_string())
            })
            .sum();
        move |_conversation, _model, _history, allowed, custom, preset| {
            // The server's rules, and an assistant's instructions when the call named one.
            let mut all =
                crate::turn::context::opening_with(&agent.settings.system_prompt, preset, None)
                    .messages();
            all.extend(input);
            let tools = within_scopes(agent.registry_with(custom), key_scopes);
            let estimate =
                budget::with_margin(Self::count_input(&all, allowed, &tools) + client_cost);
            ((all, tools), estimate)
        }
    }
}

/// The tools offered to the model: the server's allowed ones, except those a client tool
/// of the same name replaces, and the client's.
pub(super) fn with_client_tools(mut offered: Vec<ToolSpec>, client: &[ToolSpec]) -> Vec<ToolSpec> {
    if client.is_empty() {
        return offered;
    }
    offered.retain(|s| !client.iter().any(|c| c.name == s.name));
    offered.extend(client.iter().cloned());
    offered
}

/// `Some(the client's calls)` when the model called any client tool. The server's calls
/// of the same message are dropped rather than run: their results could not reach the
/// model (the client answers only its own calls), and the model may ask again.
pub(super) fn client_calls(
    client: &[ToolSpec],
    calls: &[llm::ToolCall],
) -> Option<Vec<llm::ToolCall>> {
    let theirs: Vec<llm::ToolCall> = calls
        .iter()
        .filter(|c| client.iter().any(|t| t.name == c.name))
        .cloned()
        .collect();
    (!theirs.is_empty()).then_some(theirs)
}

/// Announces the calls handed back to the client.
pub(super) fn hand_back(calls: &[StoredToolCall], events: &crate::turn::turn_log::TurnLog) {
    for c in calls {
        events.push(TurnEvent::ToolCall(Box::new(ToolCallEvent {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })));
    }
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
