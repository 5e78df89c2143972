//! What a step's model call left: the message it stored (complete, or cut short by a stop or
//! a failure), its charge, and whether the turn goes on with tools to run.

use crate::db::models::budget::Hold;
use crate::db::models::message::NewMessage;
use crate::llm;
use crate::turn::context::StoredToolCall;
use crate::turn::events::{FinishReason, TurnEvent};
use crate::turn::plan::Plan;
use crate::turn::step::attempt::ModelOutcome;
use crate::turn::step::call::ModelCall;
use crate::turn::step::commit::{clamp_i64, incomplete_assistant, Ending, TurnRecord};
use crate::turn::step::{Answer, Step};

/// What a model call is charged with.
pub(in crate::turn) struct Charge {
    /// The call's reservation.
    pub hold: Hold,
    /// Our count of its input (charged when the provider reports none).
    pub input_estimate: u64,
    /// How long it took, in milliseconds.
    pub elapsed: i64,
}

impl Step<'_> {
    /// Records the call's message and charges it. `Ok`: the model called tools of ours, to
    /// run; `Err`: the turn ends here (an answer, a stop, a failure, calls handed back to
    /// an API client).
    pub(in crate::turn) async fn answer(
        &self,
        plan: &Plan,
        call: ModelCall,
        charge: Charge,
        record: &mut TurnRecord,
    ) -> Result<Answer, Ending> {
        let ModelCall { outcome, answered } = call;
        let Charge {
            hold,
            input_estimate,
            elapsed,
        } = charge;
        let who = self.who;
        let (text, calls, usage) = match outcome {
            ModelOutcome::Completed {
                text, calls, usage, ..
            } => (text, calls, usage),
            ModelOutcome::Stopped { text, reason } => {
                // Charged for what was generated: never zero, never the whole hold.
                let output = llm::estimate_tokens(&text);
                let reason = reason.status_reason();
                let m = incomplete_assistant(who, &answered, text, reason, elapsed);
                let usage = llm::Usage::new(input_estimate, output);
                record.account(who, hold, m.id, usage, &answered);
                record.last_assistant = Some(m.id);
                record.messages.push(m);
                return Err(Ending::Finished(FinishReason::Cancelled));
            }
            ModelOutcome::Failed { text, error, .. } => {
                let (input, output) = if text.is_empty() {
                    (0, 0)
                } else {
                    (input_estimate, llm::estimate_tokens(&text))
                };
                let m = incomplete_assistant(who, &answered, text, error.code(), elapsed);
                record.account(who, hold, m.id, llm::Usage::new(input, output), &answered);
                record.last_assistant = Some(m.id);
                record.messages.push(m);
                return Err(Ending::Failed {
                    code: error.code().to_owned(),
                    message: error.log().to_owned(),
                });
            }
            ModelOutcome::Unstored(error) => {
                tracing::error!(%error, conversation = %who.conversation_id,
                    "the start of a turn did not commit");
                return Err(Ending::Unstored);
            }
        };
        let _ = self
            .events
            .send(TurnEvent::Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
            })
            .await;
        // Calls of the client's tools end the turn: the client runs them.
        let handed_back = plan.handed_back(&calls);
        let calls = handed_back.clone().unwrap_or(calls);
        let stored: Vec<StoredToolCall> = calls.iter().map(StoredToolCall::from_call).collect();
        let mut message = NewMessage::answer(
            who.conversation_id,
            text.clone(),
            // The catalogue name the user picks from (the upstream id is in the span).
            answered.model.clone(),
            elapsed,
        );
        if calls.is_empty() {
            message.citations =
                crate::turn::cite::citations(&self.engine.pool, who.user_id, &text).await;
        } else {
            message.tool_calls = Some(serde_json::to_value(&stored).unwrap_or_default());
        }
        message.input_tokens = Some(clamp_i64(usage.input_tokens));
        message.output_tokens = Some(clamp_i64(usage.output_tokens));
        record.account(who, hold, message.id, usage, &answered);
        record.last_assistant = Some(message.id);
        record.messages.push(message);
        if calls.is_empty() {
            return Err(Ending::Finished(FinishReason::Stop));
        }
        if handed_back.is_some() {
            self.hand_back(&stored);
            return Err(Ending::Finished(FinishReason::ToolCalls));
        }
        Ok(Answer {
            text,
            calls,
            stored,
        })
    }
}
