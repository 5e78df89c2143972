//! How a turn ended, and the final event each ending sends.

use uuid::Uuid;

use super::events::{ErrorEvent, FinishReason, TurnEvent};

/// How the whole turn ended.
pub(super) enum Ending {
    Finished(FinishReason),
    Failed {
        code: String,
        message: String,
    },
    /// The start never committed: there is nothing to store or release.
    Unstored,
}
/// The turn's final event if what it produced is stored (recorded with the last commit).
pub(super) fn final_event(
    ending: &Ending,
    last_assistant: Option<Uuid>,
    shutdown: bool,
) -> TurnEvent {
    match ending {
        _ if shutdown => error_event(
            "shutdown",
            "the server is restarting; what was produced so far is saved",
        ),
        Ending::Finished(finish_reason) => TurnEvent::Done {
            message_id: last_assistant,
            finish_reason: *finish_reason,
        },
        Ending::Failed { code, message } => error_event(code, message),
        Ending::Unstored => error_event(
            "unavailable",
            "the database did not confirm your message, so it may not have been saved; \
             reload the conversation and try again",
        ),
    }
}

fn error_event(code: &str, message: &str) -> TurnEvent {
    TurnEvent::Error(Box::new(ErrorEvent {
        code: code.to_owned(),
        message: message.to_owned(),
    }))
}

/// The turn ran, but what it produced could not be stored before its deadline.
pub(super) fn unsaved() -> TurnEvent {
    error_event(
        "unavailable",
        "the database is unavailable, so this reply could not be saved; try again shortly",
    )
}
