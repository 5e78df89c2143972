//! The agent owns a turn's life: [`Agent::start`] registers it (so any process can cancel
//! it), runs it on a task of its own, and releases its claim and hold if that task panics.
//! Routes only translate HTTP.

use tracing::Instrument;

use super::events::{ErrorEvent, TurnEvent};
use super::turn::{Agent, PreparedTurn};
use super::turn_log::{EventSink, TurnLog};

impl Agent {
    /// Starts a prepared turn and returns its event log (follow it with
    /// [`Agent::follow_started`]). The turn runs to its end whether or not anyone follows.
    pub fn start(&self, prepared: PreparedTurn) -> EventSink {
        let log = TurnLog::new(prepared.turn_id);
        let (control, guard) = self.turns.register(
            prepared.conversation_id,
            prepared.turn_id,
            prepared.user_id,
            log.clone(),
        );
        let tx = log.clone();
        let (turn_id, conversation_id) = (prepared.turn_id, prepared.conversation_id);
        let outstanding = prepared.outstanding.clone();
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = self.llm.provider_name(),
            gen_ai.request.model = %prepared.model,
            gen_ai.conversation.id = %conversation_id,
        );
        let agent = self.clone();
        let running = tokio::spawn(
            async move {
                let _guard = guard;
                agent.run(prepared, tx, control).await;
            }
            .instrument(span),
        );
        let agent = self.clone();
        let ended = log.clone();
        tokio::spawn(async move {
            if let Err(e) = running.await {
                if e.is_panic() {
                    ended.push(TurnEvent::Error(Box::new(ErrorEvent {
                        code: "interrupted".into(),
                        message: "the reply to this message did not complete".into(),
                    })));
                    tracing::error!(%conversation_id, "a turn panicked; releasing its budget and conversation");
                    let hold = outstanding.lock().ok().and_then(|mut o| o.take());
                    agent.abandon(turn_id, conversation_id, hold).await;
                }
            }
        });
        log
    }
}
