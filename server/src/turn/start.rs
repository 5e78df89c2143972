//! Starting a turn: the message is checked, and one transaction claims the conversation,
//! reserves the first model call's budget, stores the user message and reads what the model
//! input is built from. Its COMMIT goes out with the first model call.

use std::sync::Arc;

use uuid::Uuid;

use crate::budget;
use crate::db::conflict::{Retry, Transaction};
use crate::db::models::custom_tool::CustomToolRow;
use crate::tools::Registry;

use super::attachments;
use super::context;
use super::engine::{PreparedTurn, TurnEngine, Who};
use super::error::TurnError;
use super::plan::{self, clamp_output, Plan};
use super::refusal::{busy_error, refusal_error};
use super::sql as turn_db;
use super::sql::preset::{output_cap, TurnPreset};
use crate::auth::token::SignedToken;
use crate::db::models::idempotency::IdempotencyKey;
use crate::db::models::message::NewMessage;
use crate::domain::MessageRole;
use crate::turn::follow::Follower;

/// A turn's first model input and the tools it may use, as a turn's start builds them.
/// A new chat message, as a client sends it.
pub struct NewTurn<'a> {
    pub content: &'a str,
    /// Workspace paths of the files attached (checked against the sender's workspace).
    pub attachments: &'a [String],
    /// The request's `Idempotency-Key`: a retry follows the turn the first one started.
    pub idempotency: Option<IdempotencyKey>,
}

pub(crate) type Built = (Vec<crate::llm::ChatMessage>, Registry);

/// The images of the history a turn's input carries again ([`super::history_images`]).
pub(crate) type Earlier = super::history_images::Earlier;

/// What a turn's start records beside its new message.
#[derive(Debug, Default)]
pub(crate) struct Origin {
    /// The request's `Idempotency-Key`.
    pub idempotency: Option<crate::db::models::idempotency::IdempotencyKey>,
    /// The conversation the turn creates (a `/v1` call) rather than claims.
    pub new_conversation: Option<turn_db::NewConversation>,
    /// The API key of a `/v1` caller, re-checked in the turn's first round trip.
    pub api_key: Option<Uuid>,
    /// The new message's images (their bytes left out), checked against the model.
    pub images: Vec<crate::llm::ImagePart>,
    /// Whether the stored history's images are shown to the model again (a chat turn; an
    /// API turn's input is the request's own messages).
    pub earlier_images: bool,
}

/// Longest accepted user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 32_000;

impl TurnEngine {
    /// Sends a message of `token`'s account in its conversation: a new turn that runs to
    /// its end whether or not anyone follows, followed from its start; or, for a retried
    /// `Idempotency-Key`, the turn the first request started.
    pub async fn send(
        &self,
        token: SignedToken,
        conversation_id: Uuid,
        message: NewTurn<'_>,
    ) -> Result<Follower, TurnError> {
        let user_id = token.user_id;
        if let Some(key) = &message.idempotency {
            if let Some(turn_id) =
                super::replay::duplicate(self, &token, conversation_id, key).await?
            {
                return self.follow(user_id, conversation_id, turn_id, None).await;
            }
        }
        let attached = attachments::resolve(&self.workspaces, user_id, message.attachments).await?;
        let prepared = self
            .prepare(
                token,
                conversation_id,
                message.content,
                attached,
                message.idempotency,
            )
            .await?;
        let log = super::supervise::spawn(self, prepared);
        Ok(self.follow_started(user_id, conversation_id, log))
    }

    /// Validates the message and prepares the start of the turn as one transaction: the
    /// account is checked against the token (401), the conversation claimed (409 if a turn
    /// already runs), the first model call's budget reserved (429 if it cannot be), the user
    /// message stored, the history and the user's allowed tools read. Its COMMIT goes out with
    /// the first model call ([`PreparedTurn::start`]). `attachments` (checked by
    /// [`attachments::resolve`]) are stored with the message and named to the model.
    pub(super) async fn prepare(
        &self,
        token: SignedToken,
        conversation_id: Uuid,
        content: &str,
        attached: attachments::Resolved,
        idempotency: Option<crate::db::models::idempotency::IdempotencyKey>,
    ) -> Result<PreparedTurn, TurnError> {
        let attachments = &attached.files;
        // Files alone are a message too ("what is in this?" goes without saying).
        let blank = content.trim().is_empty() && attachments.is_empty();
        if blank || content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(TurnError::InvalidContent {
                max_chars: MAX_MESSAGE_CHARS,
            });
        }
        let mut user_message = NewMessage::complete(conversation_id, MessageRole::User, content);
        user_message.attachments = attachments::to_row(attachments);
        // What the model reads: the text, then the note naming the attached files.
        let content = attachments::model_text(content, attachments);
        // Checked against the conversation's model once it is read, before any hold.
        let image_refs: Vec<crate::llm::ImagePart> = attached
            .images
            .iter()
            .map(|i| crate::llm::ImagePart {
                data: String::new(),
                ..i.clone()
            })
            .collect();
        // The conversation's model is known once the start's reads are back; until then the
        // widest model bounds how much history is read.
        let history_room = context::history_room(
            &self.settings.system_prompt,
            &content,
            self.catalogue.now().largest_context_window(),
            0,
        );
        let build = {
            let agent = self.clone();
            move |conversation: &crate::db::models::conversation::Conversation,
                  model: &crate::catalogue::CatalogueModel,
                  history: &[crate::db::models::message::Message],
                  allowed: &[String],
                  custom: &[CustomToolRow],
                  preset: &TurnPreset,
                  earlier: &Earlier| {
                let opening = context::opening_with(
                    &agent.settings.system_prompt,
                    preset,
                    conversation.system_prompt.as_deref(),
                );
                let images = attached
                    .images
                    .into_iter()
                    .map(|i| i.for_provider(model.kind))
                    .collect();
                let user = crate::llm::ChatMessage::user(content).with_images(images);
                let input = context::assemble_seeing(
                    &opening,
                    history,
                    earlier,
                    user,
                    model.context_window,
                    u64::from(model.max_output),
                );
                let tools = agent.registry_with(custom);
                let estimate = budget::with_margin(plan::count_input(&input, allowed, &tools));
                ((input, tools), estimate)
            }
        };
        self.prepare_turn(
            token,
            user_message,
            Origin {
                idempotency,
                images: image_refs,
                earlier_images: true,
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
    ) -> Result<PreparedTurn, TurnError>
    where
        F: FnOnce(
            &crate::db::models::conversation::Conversation,
            &crate::catalogue::CatalogueModel,
            &[crate::db::models::message::Message],
            &[String],
            &[CustomToolRow],
            &TurnPreset,
            &Earlier,
        ) -> (Built, i64),
    {
        let conversation_id = new_message.conversation_id;
        let images = origin.images;
        let earlier_images = origin.earlier_images;
        let user_message = new_message;
        let user_message_id = user_message.id;
        // A turn is named by the message that started it: any process finds it from its id.
        let turn_id = user_message_id;
        // Capped to the conversation's model once it is known (`Opened::cap_output`).
        let max_output = i64::from(self.catalogue.now().largest_max_output());
        let ask = turn_db::BudgetAsk {
            price: None,
            max_output,
            min_output: max_output.min(budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
        };
        let mut conn = self.pool.get_for_start(self.settings.turn_timeout).await?;
        let claim = turn_db::Claim {
            user_id: token.user_id,
            token_version: token.token_version,
            turn_id,
            stale_after: self.settings.turn_timeout + crate::turn::plan::STORE_GRACE,
            process_id: self.process_id,
            idempotency: origin.idempotency,
            new_conversation: origin.new_conversation,
            api_key: origin.api_key,
            max_messages: i64::from(self.settings.max_conversation_messages),
        };
        // What this process knows of the history (taken out; the start puts the new back).
        let mut known = match claim.new_conversation {
            None => self.history.take(conversation_id),
            Some(_) => None,
        };
        // The first round trip takes the start's locks (the claim, then the budget
        // period); a conflict lost there was rolled back whole and is sent again.
        let mut retry = Retry::new(Transaction::TurnStart, &self.metrics.db_conflicts);
        let opened = loop {
            // The copies are what a retry sends again (the first attempt consumes them).
            let attempt = turn_db::open(
                &mut conn,
                claim.clone(),
                user_message.clone(),
                ask.clone(),
                history_room,
                // A retry reads the history whole.
                known.take(),
            )
            .await;
            match attempt {
                Err(e) if retry.again(&e).await => {}
                other => break other?,
            }
        };
        // Named by a refusal of the money budget.
        let mut model_name = String::new();
        let started = match opened {
            Ok(mut opened) => {
                if let Some(known) = opened.known.take() {
                    self.history.put(conversation_id, known);
                }
                let preset = std::mem::take(&mut opened.preset);
                if let Some(a) = &preset.assistant {
                    if !a.usable {
                        opened.abort().await?;
                        return Err(TurnError::AssistantUnavailable(a.name.clone()));
                    }
                    plan::narrow_to_assistant(&mut opened.conversation, &mut opened.role, a);
                }
                let catalogue = self.catalogue.now();
                let model = match plan::model_for(&catalogue, &opened.conversation, &opened.role) {
                    Ok(model) => model,
                    Err(refused) => {
                        opened.abort().await?;
                        return Err(refused);
                    }
                };
                if let Err(refused) = attachments::check_images(&model, &images) {
                    opened.abort().await?;
                    return Err(refused);
                }
                opened.cap_output(i64::from(output_cap(
                    preset.assistant.as_ref(),
                    model.max_output,
                )));
                model_name.clone_from(&model.name);
                drop(catalogue);
                let currency = opened.money_budget().map(|b| b.currency.as_str());
                let price = match plan::priced_for(&model, currency) {
                    Ok(price) => price,
                    Err(refused) => {
                        opened.abort().await?;
                        return Err(refused);
                    }
                };
                opened.price_calls_at(price);
                // Only a history with images is read from (and only for a model that sees).
                let earlier = if earlier_images {
                    super::history_images::read(
                        &self.workspaces,
                        token.user_id,
                        &model,
                        &opened.history.messages,
                        images.len(),
                    )
                    .await
                } else {
                    Earlier::default()
                };
                let (built, estimate) = build(
                    &opened.conversation,
                    &model,
                    &opened.history.messages,
                    &opened.role.tools,
                    &opened.custom_tools,
                    &preset,
                    &earlier,
                );
                opened
                    .reserve(estimate)
                    .await?
                    .map(|started| (started, (built, model, preset)))
            }
            Err(refusal) => Err(refusal),
        };
        let (started, ((input, tools), model, preset)) = match started {
            Ok(started) => started,
            Err(turn_db::Refusal::Rejected(r)) => return Err(r.into()),
            Err(turn_db::Refusal::NotFound) => return Err(TurnError::NotFound("conversation")),
            Err(turn_db::Refusal::Busy) => return Err(busy_error(&mut conn, conversation_id).await),
            Err(turn_db::Refusal::Full) => {
                return Err(TurnError::ConversationFull {
                    max: self.settings.max_conversation_messages,
                })
            }
            Err(turn_db::Refusal::Budget(refusal)) => {
                self.metrics.budget_refusals.inc();
                return Err(refusal_error(*refusal, &model_name));
            }
        };
        let turn_db::Started {
            conversation,
            account,
            input_estimate,
            role,
            hold,
            committing,
            ..
        } = started;
        let wants_title = conversation.title_auto;
        let max_tokens = clamp_output(
            hold.output_room(input_estimate),
            i64::from(output_cap(preset.assistant.as_ref(), model.max_output)),
        );
        let mut plan = Plan::new(
            model.name.clone(),
            role,
            tools,
            preset.assistant.map(Arc::new),
        );
        plan.client_tools = client_tools;
        Ok(PreparedTurn {
            who: Who {
                turn_id,
                user_id: token.user_id,
                username: account.username,
                conversation_id,
                user_message_id,
                outstanding: Default::default(),
            },
            plan,
            input,
            first_call: (hold, max_tokens),
            start: Some(crate::turn::pending_start::PendingStart::new(
                conn,
                committing,
                user_message_id,
            )),
            wants_title,
        })
    }
}
