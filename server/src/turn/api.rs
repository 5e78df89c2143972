//! Turns of the OpenAI-compatible API. Each call is stored as a new conversation of its
//! caller: the request's earlier messages first, then the turn as usual (the last message
//! is its new message, a user prompt or the client's tool results). The model sees exactly
//! the request's messages after the server's system prompt; the client's own tools are
//! offered next to the server's, and a model message that calls one ends the turn with
//! those calls handed back (`finish_reason: tool_calls`), never run here.

use crate::auth::token::SignedToken;
use crate::budget;
use crate::db::models::conversation::Conversation;
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::message::{Message, NewMessage};
use crate::domain::KeyScopes;
use crate::llm::{self, ChatMessage, ToolSpec};
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::error::TurnError;
use crate::turn::follow::Follower;
use crate::turn::plan;
use crate::turn::sql as turn_db;
use uuid::Uuid;

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
        let (user_id, conversation_id) = (prepared.who.user_id, prepared.who.conversation_id);
        let log = crate::turn::supervise::spawn(self, prepared);
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
        &crate::catalogue::CatalogueModel,
        &[Message],
        &[String],
        &[CustomToolRow],
        &crate::turn::sql::preset::TurnPreset,
        &crate::turn::start::Earlier,
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
        move |_conversation, _model, _history, allowed, custom, preset, _earlier| {
            // The server's rules, and an assistant's instructions when the call named one.
            let mut all =
                crate::turn::context::opening_with(&agent.settings.system_prompt, preset, None)
                    .messages();
            all.extend(input);
            let tools = plan::within_scopes(agent.registry_with(custom), key_scopes);
            let estimate =
                budget::with_margin(plan::count_input(&all, allowed, &tools) + client_cost);
            ((all, tools), estimate)
        }
    }
}
