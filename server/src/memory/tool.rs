//! `remember`: the model keeps a note for the user's later chats. A tool like any other
//! (role allowlists, approvals, audit rows apply through the registry), so an admin turns it
//! off by leaving it out of a role; the person chatting confirms each call unless the role
//! says otherwise; it refuses while memory is off for the user or in the chat, and the note
//! is bounded like one written by hand. An API key's turns have it only with the `memory`
//! scope.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::store::{self, MemoryError};
use crate::config::MemorySettings;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// The tool's name (roles list it).
pub const NAME: &str = "remember";

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The fact to keep, in one short sentence in the user's terms (e.g. "Prefers answers
    /// in French").
    #[schemars(length(min = 1, max = 2000))]
    pub text: String,
}

/// Stores memory notes for the calling user.
pub struct Remember {
    pool: crate::db::Pool,
    limits: MemorySettings,
}

impl Remember {
    pub fn shared(pool: crate::db::Pool, limits: MemorySettings) -> Arc<Self> {
        Arc::new(Self { pool, limits })
    }
}

#[async_trait]
impl Tool for Remember {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Keep a short note about the user for their future chats (a preference or a fact \
         they want remembered). Use only when the user asks you to remember something."
    }

    fn parameters(&self) -> Value {
        args_schema::<RememberArgs>()
    }

    /// A note reaches the owner's later chats: an API key needs the `memory` scope.
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Memory)
    }

    /// A note reaches every later chat, and the model may be steered into writing one by
    /// what it read: the person chatting confirms it unless the role's map says otherwise.
    fn default_approver(&self) -> crate::domain::Approver {
        crate::domain::Approver::User
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: RememberArgs = parse_args(args)?;
        let mut conn = self
            .pool
            .get()
            .await
            .map_err(|_| ToolError::Failed("memory is unavailable right now".into()))?;
        let writer = store::Writer::Model {
            chat: ctx.conversation_id,
        };
        match store::add(&mut conn, ctx.user_id, &args.text, writer, &self.limits).await {
            Ok(note) => Ok(json!({"remembered": note.text, "id": note.id})),
            Err(MemoryError::Invalid(m)) => Err(ToolError::InvalidArguments(format!("text: {m}"))),
            Err(MemoryError::Full(m)) => Err(ToolError::Failed(m)),
            Err(MemoryError::Off) => Err(ToolError::NotPermitted(
                "the user turned memory off; nothing was kept".into(),
            )),
            Err(MemoryError::OffInChat) => Err(ToolError::NotPermitted(
                "the user turned memory off in this chat; nothing was kept".into(),
            )),
            Err(MemoryError::NotFound) => Err(ToolError::Failed("no such account".into())),
            Err(MemoryError::Db(e)) => {
                tracing::warn!(error = %e, "remember failed");
                Err(ToolError::Failed("memory is unavailable right now".into()))
            }
        }
    }
}
