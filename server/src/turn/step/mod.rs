//! One step of a turn: a model call with its fallbacks (`call.rs`, one attempt in
//! `attempt.rs`), its message and charge (`answer.rs`), the tools it asked for (`tools.rs`), and the commit that stores the step
//! and reserves the next call (`commit.rs`, with what the turn has produced and how it
//! ended). The loop (`turn/run.rs`) and a resumed turn (`approval/resume.rs`) run the same
//! step; what a step may do comes from the turn's [`crate::turn::plan::Plan`].

pub(super) mod answer;
pub(super) mod attempt;
pub(super) mod call;
pub(super) mod commit;
pub(super) mod tools;

use crate::cluster::control::TurnControl;
use crate::llm;
use crate::tools::ToolContext;
use crate::turn::context::StoredToolCall;
use crate::turn::engine::{TurnEngine, Who};
use crate::turn::turn_log::EventSink;

/// What a turn's steps run with: the engine, whose turn it is, its event log and its stop.
pub(super) struct Step<'a> {
    pub engine: &'a TurnEngine,
    pub who: &'a Who,
    pub events: &'a EventSink,
    pub control: &'a TurnControl,
    /// What the tools run as.
    pub ctx: ToolContext,
}

impl<'a> Step<'a> {
    pub fn new(
        engine: &'a TurnEngine,
        who: &'a Who,
        events: &'a EventSink,
        control: &'a TurnControl,
    ) -> Self {
        let ctx = ToolContext {
            user_id: who.user_id,
            username: who.username.clone(),
            conversation_id: who.conversation_id,
        };
        Self {
            engine,
            who,
            events,
            control,
            ctx,
        }
    }
}

/// A finished model message that called tools.
pub(super) struct Answer {
    pub text: String,
    pub calls: Vec<llm::ToolCall>,
    /// The calls as stored with the message.
    pub stored: Vec<StoredToolCall>,
}
