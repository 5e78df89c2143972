//! The agent: one chat turn is the reasoning-plus-tool loop, run on the server, streamed to
//! the client and stored in Postgres.

pub mod active;
pub mod api;
mod approval;
pub mod attachments;
pub mod cancel;
pub mod context;
pub mod control;
pub mod decisions;
pub mod events;
pub mod follow;
pub mod liveness;
#[cfg(test)]
mod loop_tests;
mod model_call;
mod record;
mod replay;
mod resume;
pub mod store;
mod supervise;
mod title;
mod tool_calls;
pub mod tool_set;
pub mod turn;
pub mod turn_log;

use uuid::Uuid;

use crate::budget;
use crate::db::models::budget::Reserve;
use crate::db::models::custom_tool::CustomToolRow;
use crate::tools::Registry;

pub use active::ActiveTurns;
pub use control::{StopReason, TurnControl};
pub use events::{FinishReason, TurnEvent};
pub use turn::{Agent, PreparedTurn};
pub use turn_log::EventId;

use crate::auth::SignedToken;
use crate::db::models::message::NewMessage;
use crate::db::models::turn as turn_db;
use crate::error::ApiError;

/// A turn's first model input and the tools it may use, as a turn's start builds them.
pub(crate) type Built = (Vec<crate::llm::ChatMessage>, Registry);

/// What a turn's start records beside its new message.
#[derive(Debug, Default)]
pub(crate) struct Origin {
    /// The request's `Idempotency-Key`.
    pub idempotency: Option<crate::db::models::idempotency::IdempotencyKey>,
    /// The conversation the turn creates (a `/v1` call) rather than claims.
    pub new_conversation: Option<turn_db::NewConversation>,
    /// The API key of a `/v1` caller, re-checked in the turn's first round trip.
    pub api_key: Option<Uuid>,
}

/// Longest accepted user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 32_000;

impl Agent {
    /// Validates the message and prepares the start of the turn as one transaction: the
    /// account is checked against the token (401), the conversation claimed (409 if a turn
    /// already runs), the first model call's budget reserved (429 if it cannot be), the user
    /// message stored, the history and the user's allowed tools read. Its COMMIT goes out with
    /// the first model call ([`PreparedTurn::start`]). `attachments` (checked by
    /// [`attachments::resolve`]) are stored with the message and named to the model.
    pub async fn prepare(
        &self,
        token: SignedToken,
        conversation_id: Uuid,
        content: &str,
        attachments: &[attachments::Attachment],
        idempotency: Option<crate::db::models::idempotency::IdempotencyKey>,
    ) -> Result<PreparedTurn, ApiError> {
        // Files alone are a message too ("what is in this?" goes without saying).
        let blank = content.trim().is_empty() && attachments.is_empty();
        if blank || content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(ApiError::bad_request(
                "invalid_content",
                format!(
                    "content must be 1 to {MAX_MESSAGE_CHARS} characters (it may be empty when \
                     files are attached)"
                ),
            ));
        }
        let mut user_message = NewMessage::complete(conversation_id, "user", content);
        user_message.attachments = attachments::to_row(attachments);
        // What the model reads: the text, then the note naming the attached files.
        let content = attachments::model_text(content, attachments);
        let history_room = context::history_room(
            &self.settings.system_prompt,
            &content,
            self.settings.context_window_tokens,
            u64::from(self.settings.max_output_tokens),
        );
        let build = {
            let agent = self.clone();
            move |conversation: &crate::db::models::conversation::Conversation,
                  history: &[crate::db::models::message::Message],
                  allowed: &[String],
                  custom: &[CustomToolRow]| {
                let system = context::system_prompt(
                    &agent.settings.system_prompt,
                    conversation.system_prompt.as_deref(),
                );
                let input = context::assemble(
                    &system,
                    history,
                    &content,
                    agent.settings.context_window_tokens,
                    u64::from(agent.settings.max_output_tokens),
                );
                let tools = agent.registry_with(custom);
                let estimate = agent.estimate_input(&input, allowed, &tools);
                ((input, tools), estimate)
            }
        };
        self.prepare_turn(
            token,
            user_message,
            Origin {
                idempotency,
                ..Default::default()
            },
            history_room,
            build,
            Vec::new(),
        )
        .await
    }

    /// Starts a turn whose new message (a user prompt, or a client's tool results) is
    /// `new_message`; `build` makes the model input from the history that fits in
    /// `history_room` and the user's tools. `client_tools` are offered next to ours and
    /// handed back when called ([`api`]).
    pub(crate) async fn prepare_turn<F>(
        &self,
        token: SignedToken,
        new_message: NewMessage,
        origin: Origin,
        history_room: u64,
        build: F,
        client_tools: Vec<crate::llm::ToolSpec>,
    ) -> Result<PreparedTurn, ApiError>
    where
        F: FnOnce(
                &crate::db::models::conversation::Conversation,
                &[crate::db::models::message::Message],
                &[String],
                &[CustomToolRow],
            ) -> (Built, i64)
            + Send
            + 'static,
    {
        let conversation_id = new_message.conversation_id;
        let user_message = new_message;
        let user_message_id = user_message.id;
        // A turn is named by the message that started it: any process finds it from its id.
        let turn_id = user_message_id;
        let max_output = i64::from(self.settings.max_output_tokens);
        let ask = turn_db::BudgetAsk {
            max_output,
            min_output: max_output.min(budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
        };
        let mut conn = self.pool.get_for_start(self.settings.turn_timeout).await?;
        let begun = turn_db::begin(
            &mut conn,
            turn_db::Claim {
                user_id: token.user_id,
                token_version: token.token_version,
                turn_id,
                stale_after: self.settings.turn_timeout + store::STORE_GRACE,
                process_id: self.process_id,
                idempotency: origin.idempotency,
                new_conversation: origin.new_conversation,
                api_key: origin.api_key,
            },
            user_message,
            ask,
            history_room,
            build,
        )
        .await?;
        let started = match begun {
            turn_db::Begin::Started(started) => *started,
            turn_db::Begin::Rejected(r) => return Err(r.into()),
            turn_db::Begin::NotFound => return Err(ApiError::not_found("conversation")),
            turn_db::Begin::Busy => return Err(busy_error(&mut conn, conversation_id).await),
            turn_db::Begin::Refused(refusal) => {
                self.metrics.budget_refusals.inc();
                return Err(refusal_error(&refusal));
            }
        };
        let turn_db::Started {
            conversation,
            account,
            built: (input, tools),
            input_estimate,
            role,
            hold,
            committing,
            ..
        } = started;
        let wants_title = conversation.title_auto;
        let model = conversation
            .model
            .filter(|m| self.settings.models.contains(m))
            .unwrap_or_else(|| self.settings.model.clone());
        let max_tokens = clamp_output(hold.amount - input_estimate, max_output);
        Ok(PreparedTurn {
            turn_id,
            user_id: token.user_id,
            username: account.username,
            conversation_id,
            user_message_id,
            model,
            input,
            role,
            tools,
            first_call: (hold, max_tokens),
            start: Some(store::PendingStart::new(conn, committing, user_message_id)),
            outstanding: Default::default(),
            client_tools,
            wants_title,
        })
    }

    /// How long a reservation may live before the sweeper frees it: a live turn settles it
    /// before then, even one storing itself after its deadline.
    pub fn hold_ttl(&self) -> std::time::Duration {
        self.settings.turn_timeout + store::STORE_GRACE
    }

    /// The built-in tools plus the tools of the MCP servers that are up plus the
    /// admin-defined ones ([`tool_set`]).
    pub fn registry_with(&self, custom: &[CustomToolRow]) -> Registry {
        self.tool_set
            .get(&self.tools, self.mcp.registry(), custom, &self.http)
    }

    /// Estimated input tokens of a call, with the safety margin.
    pub fn estimate_input(
        &self,
        input: &[crate::llm::ChatMessage],
        allowed: &[String],
        tools: &Registry,
    ) -> i64 {
        budget::with_margin(Self::count_input(input, allowed, tools))
    }

    /// Our count of a call's input tokens: the messages and the offered tools' schemas (what
    /// is charged when the provider reports no usage).
    pub fn count_input(
        input: &[crate::llm::ChatMessage],
        allowed: &[String],
        tools: &Registry,
    ) -> u64 {
        let messages: u64 = input.iter().map(context::cost).sum();
        let tools: u64 = tools
            .allowed_specs(allowed)
            .map(|(s, schema_chars)| {
                crate::llm::estimate_tokens_of_chars(schema_chars)
                    + crate::llm::estimate_tokens(&s.description)
            })
            .sum();
        messages + tools
    }
}

/// 409 for a conversation that cannot take a message now: a reply is running, or one waits
/// for approval (a new message would land between a call and its result).
async fn busy_error(conn: &mut diesel_async::AsyncPgConnection, conversation_id: Uuid) -> ApiError {
    let waiting = crate::db::models::approval::blocks_conversation(conn, conversation_id)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "checking for waiting approvals failed");
            false
        });
    if waiting {
        return ApiError::conflict(
            "approval_pending",
            "the reply in this conversation waits for a tool call to be approved or denied; \
             decide it (or wait for it to expire) before sending a new message",
        );
    }
    ApiError::conflict(
        "turn_in_progress",
        "a reply is already being generated in this conversation; wait for it or cancel it",
    )
}

/// The output cap a reservation leaves room for.
pub fn clamp_output(room: i64, max_output: i64) -> u32 {
    u32::try_from(room.clamp(1, max_output.max(1))).unwrap_or(u32::MAX)
}

/// 429 for a refused reservation: too little left (with the numbers, and when it resets)
/// or held by other turns. "Used up" only when nothing is left.
pub fn refusal_error(refusal: &Reserve) -> ApiError {
    match refusal {
        Reserve::Exhausted {
            resets_at,
            need,
            left,
            limit,
        } => {
            let when = match resets_at {
                Some(t) => format!(
                    "it resets at {}",
                    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
                None => "ask an admin to raise it".to_owned(),
            };
            let wait = resets_at
                .map(|t| (t - chrono::Utc::now()).num_seconds().max(1))
                .unwrap_or(3600);
            let message = if *left <= 0 {
                format!("your token budget is used up; {when}")
            } else {
                format!(
                    "this message needs about {need} tokens and your budget has {left} left; {when}"
                )
            };
            let details = crate::error::BudgetDetails {
                needed: *need,
                remaining: (*left).max(0),
                limit: *limit,
                resets_at: *resets_at,
            };
            ApiError::too_many(
                "budget_exhausted",
                message,
                u64::try_from(wait).unwrap_or(3600),
            )
            .with_details(details)
        }
        _ => ApiError::too_many(
            "budget_in_use",
            "replies already in progress hold the rest of your token budget; try again when they finish",
            2,
        ),
    }
}
