//! The turn: one message's reasoning-plus-tool loop, run on the server, streamed to whoever
//! follows it and stored in Postgres step by step. [`TurnEngine`] is its one public face:
//! start, follow, decide, resume and cancel a turn; everything else here is its inside.
//!
//! A chat turn by file (`POST /api/conversations/{id}/messages`, `routes/messages.rs`):
//! - `start.rs`: [`TurnEngine::send`] checks the message and its attachments
//!   (`attachments.rs`);
//!   then the start's transaction, [`sql::open`] (account, claim, history, role, tools
//!   in one round trip), the model input built from it (`context.rs`), then
//!   [`sql::Opened::reserve`] (budget hold, user message, COMMIT overlapping the model call);
//!   what the turn may do is decided there once, as its `Plan` (`plan.rs`: model, role
//!   narrowed by the assistant and the key's scopes, tools offered, sampling, output cap);
//! - `supervise.rs`: the turn gets a task of its own, registered in
//!   [`crate::cluster::active`] so any process can stop it; one supervisor for new and
//!   resumed turns;
//! - `run.rs`: the loop, a short one over `step/`: `step/call.rs` (a model call with its
//!   fallbacks; one attempt in `step/attempt.rs`), `step/tools.rs` (the tools it asked for,
//!   from `tool_set.rs`; `approval/pause.rs`: calls that wait for a person),
//!   `step/commit.rs` (one commit per step, [`sql::next_call`], which renews the plan's
//!   role; what the turn produced, how it ended); `store.rs` stores the last one
//!   ([`sql::finish`]; `store_failure.rs`: which failures are retried);
//! - `turn_log.rs`, `follow.rs`, `replay.rs`: its events, to the request that started it or
//!   to anyone re-attaching ([`Follower`]), from memory or from what was stored;
//!   `signals.rs` answers the cluster channel's `follow:`/stop signals for this process;
//! - `title.rs`: the conversation's title after its first answer.
//!
//! A `/v1/chat/completions` call (`routes/openai/`): the route translates the request,
//! `api.rs` makes it an [`ApiTurn`] and runs it ([`TurnEngine::send_api`]) through the same
//! `start.rs` and `run.rs`, handing client-side tool calls back instead of running them.
//!
//! An approval decision (`POST /api/approvals/{id}`, `routes/approvals.rs`):
//! `approval/decide.rs` judges and records it (`approval/sql.rs`), and once every waiting
//! call of the step is decided `approval/resume.rs` runs the approved calls with the same
//! step (its tools and its commit) and hands the turn back to the same supervisor
//! (`supervise.rs`) and loop; `approval/sql_step.rs` is the
//! step's SQL. [`TurnError`] is every way a turn can refuse; `crate::error` maps it to HTTP.

mod api;
mod approval;
mod attachments;
mod cite;
mod context;
mod engine;
pub mod error;
mod events;
mod follow;
mod history_cache;
mod history_images;
#[cfg(test)]
mod loop_tests;
mod pending_start;
mod plan;
mod refusal;
mod replay;
mod run;
mod signals;
/// The turn's SQL (public for the database fault tests in `tests/api/database.rs`; the
/// layering test keeps the server's other modules out).
pub mod sql;
mod start;
mod step;
mod store;
mod store_failure;
mod supervise;
pub(crate) mod title;
mod tool_images;
mod tool_set;
mod turn_log;

pub use api::ApiTurn;
pub use approval::decide::{Decision, DecisionOutcome};
pub use approval::sql::{Approval, Decider, ListFilter as ApprovalFilter};
pub use attachments::{of as attachments_of, Attachment};
pub use context::{cost as message_tokens, StoredToolCall};
pub use engine::{Cancelled, RunningTurns, TurnEngine};
pub use error::TurnError;
pub use events::{FinishReason, TurnEvent};
pub use follow::Follower;
pub use signals::Listeners;
pub use start::NewTurn;
pub use start::MAX_MESSAGE_CHARS;
pub use turn_log::EventId;

/// Internals the database tests in `tests/api/database.rs` drive directly; the layering
/// test keeps the server's other modules out.
#[doc(hidden)]
pub mod testing {
    pub use super::context::{assemble, history_room, Opening};
    pub use super::pending_start::PendingStart;
}
