//! Why a turn, or a request about one, cannot go ahead, in the turn's own words. The HTTP
//! boundary decides statuses and codes ([`crate::error`]); nothing here knows of them.

use chrono::{DateTime, Utc};

use crate::db::models::user::Rejection;
use crate::db::DbError;

/// A refused or failed turn request.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The message is empty (without files) or longer than [`super::MAX_MESSAGE_CHARS`].
    #[error(
        "content must be 1 to {max_chars} characters (it may be empty when files are attached)"
    )]
    InvalidContent { max_chars: usize },
    /// An attached file cannot be attached (`code` says why; the message names it).
    #[error("{message}")]
    Attachment { code: &'static str, message: String },
    /// No such conversation, turn or approval, or not the caller's.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The token or key no longer speaks for its account.
    #[error("access refused: {0:?}")]
    Account(Rejection),
    /// The conversation holds `llm.max_conversation_messages` messages already.
    #[error("this conversation has reached {max} messages, the most one may hold; start a new conversation")]
    ConversationFull { max: u32 },
    /// The user's role may not use the conversation's model.
    #[error("the role `{role}` may not use the model `{model}`")]
    ModelNotAllowed { model: String, role: String },
    /// The conversation's assistant was retired, or the user's role no longer sees it.
    #[error("the assistant `{0}` is no longer available to you; start a new conversation")]
    AssistantUnavailable(String),
    /// The catalogue no longer offers the conversation's model.
    #[error("the model `{0}` is no longer offered; pick another model for this conversation")]
    ModelUnavailable(String),
    /// The user's role has a money budget and the model has no price in its currency.
    #[error("the model `{model}` has no price in {currency}, so your money budget cannot pay for it; pick a priced model")]
    ModelUnpriced { model: String, currency: String },
    /// A reply is already being generated in the conversation.
    #[error("a reply is already being generated in this conversation")]
    Busy,
    /// The conversation's reply waits for a tool call to be decided; `admin`: only an admin
    /// may decide it (none of the waiting calls is the user's to decide).
    #[error("the reply in this conversation waits for an approval")]
    ApprovalPending { admin: bool },
    /// Too little budget is left for the message.
    #[error("the token budget cannot cover this message")]
    BudgetExhausted(BudgetShortfall),
    /// Too little of the money budget is left for the message.
    #[error("the money budget cannot cover this message")]
    MoneyExhausted(MoneyShortfall),
    /// Turns already running hold the rest of the budget.
    #[error("running turns hold the rest of the token budget")]
    BudgetInUse,
    /// The `Idempotency-Key` was used before for another message.
    #[error("this Idempotency-Key was already used for a different message")]
    IdempotencyKeyReused,
    /// The approval is an admin's to decide.
    #[error("an admin must decide this call")]
    AdminApproval,
    /// The approval is the chatting user's to decide.
    #[error("only the person chatting decides this call")]
    NotYourApproval,
    /// The approval was decided before (`state` is what it became).
    #[error("this call was already {state}")]
    AlreadyDecided { state: crate::domain::ApprovalState },
    /// The approval waited too long; its call did not run.
    #[error("this call waited too long and expired; it did not run")]
    ApprovalExpired,
    #[error(transparent)]
    Db(#[from] DbError),
    /// Anything else: a bug or an unexpected failure (logged, never shown).
    #[error(transparent)]
    Internal(anyhow::Error),
}

/// What a refused message needed and what the budget has left.
#[derive(Debug, Clone)]
pub struct BudgetShortfall {
    /// Tokens the message needs (its input estimate plus the least useful output).
    pub need: i64,
    /// Tokens left in the period (may be 0 or less when used up).
    pub left: i64,
    pub limit: Option<i64>,
    /// When the period ends (none for a `total` budget).
    pub resets_at: Option<DateTime<Utc>>,
}

/// What a refused message needed of a money budget and what was left.
#[derive(Debug, Clone)]
pub struct MoneyShortfall {
    /// The message's least useful cost at the model's price.
    pub need: rust_decimal::Decimal,
    pub left: rust_decimal::Decimal,
    pub limit: rust_decimal::Decimal,
    pub currency: String,
    pub resets_at: Option<DateTime<Utc>>,
}

impl From<diesel::result::Error> for TurnError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Db(e.into())
    }
}

impl From<Rejection> for TurnError {
    fn from(r: Rejection) -> Self {
        Self::Account(r)
    }
}
