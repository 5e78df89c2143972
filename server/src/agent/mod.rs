//! The agent: one chat turn is the reasoning-plus-tool loop, run on the server, streamed to
//! the client and stored in Postgres.

pub mod active;
pub mod context;
pub mod events;
pub mod turn;

use uuid::Uuid;

pub use active::ActiveTurns;
pub use events::{FinishReason, TurnEvent};
pub use turn::{Agent, PreparedTurn, StopReason, TurnControl};

use crate::auth::AuthUser;
use crate::db::models::message::NewMessage;
use crate::db::{self, models::turn as turn_db};
use crate::error::ApiError;

/// Longest accepted user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 32_000;

impl Agent {
    /// Validates the message and makes the start of the turn durable in one commit: the
    /// conversation is claimed (409 if a turn already runs), the user message stored, the
    /// history and the user's allowed tools read.
    pub async fn prepare(
        &self,
        user: &AuthUser,
        conversation_id: Uuid,
        content: &str,
    ) -> Result<PreparedTurn, ApiError> {
        if content.trim().is_empty() || content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(ApiError::bad_request(
                "invalid_content",
                format!("content must be 1 to {MAX_MESSAGE_CHARS} characters"),
            ));
        }
        let turn_id = Uuid::new_v4();
        let user_message = NewMessage {
            id: Uuid::new_v4(),
            conversation_id,
            role: "user".into(),
            content: content.to_owned(),
            tool_calls: None,
            tool_call_id: None,
            status: "complete".into(),
            status_reason: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            duration_ms: None,
        };
        let user_message_id = user_message.id;
        let mut conn = db::conn(&self.pool).await?;
        let begun = turn_db::begin(
            &mut conn,
            user.id,
            &user.role,
            turn_id,
            user_message,
            self.settings.turn_timeout,
        )
        .await?;
        let (conversation, history, allowed_tools) = match begun {
            turn_db::Begin::Started {
                conversation,
                history,
                allowed_tools,
            } => (conversation, history, allowed_tools),
            turn_db::Begin::NotFound => return Err(ApiError::not_found("conversation")),
            turn_db::Begin::Busy => return Err(ApiError::conflict(
                "turn_in_progress",
                "a reply is already being generated in this conversation; wait for it or cancel it",
            )),
        };
        let model = conversation
            .model
            .filter(|m| self.settings.models.contains(m))
            .unwrap_or_else(|| self.settings.model.clone());
        let input = context::assemble(
            &self.settings.system_prompt,
            &history,
            content,
            self.settings.context_window_tokens,
            u64::from(self.settings.max_output_tokens),
        );
        Ok(PreparedTurn {
            turn_id,
            user_id: user.id,
            username: user.username.clone(),
            conversation_id,
            user_message_id,
            model,
            input,
            allowed_tools,
        })
    }
}
