//! Running a paused turn on, once every call of its step is decided, on whichever process
//! took the last decision (or noticed the expiry). The decided calls run with the arguments
//! stored with their approvals, checked against the role's allowlist as it is now; denied and
//! expired ones become tool errors naming who decided and why. Their results are stored with
//! the next model call's reservation (as between any two steps), and the turn goes on as usual.

use tokio::sync::mpsc;
use tracing::Instrument;

use super::context;
use super::control::TurnControl;
use super::events::{FinishReason, TurnEvent};
use super::resume_calls::{as_stored, unavailable};
use super::turn::Agent;
use crate::db;
use crate::db::models::approval::{Claimant, Resume};
use crate::db::models::budget::Reserve;
use crate::db::models::turn as turn_db;

/// Events buffered per resumed turn before it waits for a slow client.
const EVENT_BUFFER: usize = 256;

impl Agent {
    /// Who may claim a conversation for a resumed turn: this process.
    pub fn claimant(&self) -> Claimant {
        Claimant {
            process_id: self.process_id,
            stale_after: self.hold_ttl(),
        }
    }

    /// Runs a decided step on, on a task of its own; returns its events. The turn is
    /// registered (cancel reaches it) and its claim released if the task panics.
    pub fn start_resumed(&self, resume: Resume) -> mpsc::Receiver<TurnEvent> {
        let (control, guard) =
            self.turns
                .register(resume.conversation_id, resume.turn_id, resume.user_id);
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let (turn_id, conversation_id) = (resume.turn_id, resume.conversation_id);
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = self.llm.provider_name(),
            gen_ai.conversation.id = %conversation_id,
            resumed = true,
        );
        let agent = self.clone();
        let running = tokio::spawn(
            async move {
                let _guard = guard;
                agent.run_resumed(resume, tx, control).await;
            }
            .instrument(span),
        );
        let agent = self.clone();
        tokio::spawn(async move {
            if let Err(e) = running.await {
                if e.is_panic() {
                    tracing::error!(%conversation_id, "a resumed turn panicked; releasing its conversation");
                    agent.abandon(turn_id, conversation_id, None).await;
                }
            }
        });
        rx
    }

    /// [`Agent::start_resumed`] for a turn nobody follows: its events are read and dropped
    /// (a turn whose receiver is gone stops as if its client left).
    pub fn resume_unattended(&self, resume: Resume) {
        let mut rx = self.start_resumed(resume);
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
    }

    async fn run_resumed(
        &self,
        resume: Resume,
        events: mpsc::Sender<TurnEvent>,
        control: TurnControl,
    ) {
        let (mut turn, history) = match self.load_resumed(&resume).await {
            Ok(Some(loaded)) => loaded,
            Ok(None) => {
                // The account is gone or disabled: nothing runs; the claim is let go.
                self.release_resumed(&resume, Vec::new(), Vec::new()).await;
                let _ = events
                    .send(TurnEvent::Done {
                        message_id: None,
                        finish_reason: FinishReason::Cancelled,
                    })
                    .await;
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "loading a resumed turn failed");
                self.release_resumed(&resume, Vec::new(), Vec::new()).await;
                let _ = events.send(unavailable()).await;
                return;
            }
        };
        let _ = events
            .send(TurnEvent::TurnStart {
                message_id: turn.user_message_id,
            })
            .await;
        let Some((results, audit)) = self
            .run_decided(&turn, &resume, &history, &events, &control)
            .await
        else {
            self.release_resumed(&resume, Vec::new(), Vec::new()).await;
            let _ = events
                .send(TurnEvent::Done {
                    message_id: None,
                    finish_reason: FinishReason::Cancelled,
                })
                .await;
            return;
        };
        let mut history = history;
        history.extend(results.iter().map(as_stored));
        let max_output = u64::from(self.settings.max_output_tokens);
        turn.input = context::assemble_resumed(
            &self.settings.system_prompt,
            &history,
            self.settings.context_window_tokens,
            max_output,
        );
        let estimate = self.estimate_input(&turn.input, &turn.allowed_tools, &turn.tools);
        let max_output = i64::from(self.settings.max_output_tokens);
        let step = turn_db::Step {
            settle: None,
            messages: results.clone(),
            usage: Vec::new(),
            audit: audit.clone(),
            want: estimate + max_output,
            need: estimate + max_output.min(crate::budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
            process_id: self.process_id,
        };
        let next = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn_db::next_call(&mut conn, turn.user_id, step)
                .await
                .map_err(anyhow::Error::from)
        }
        .await;
        let next = match next {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "storing the decided calls failed");
                self.release_resumed(&resume, results, audit).await;
                let _ = events.send(unavailable()).await;
                return;
            }
        };
        match next.reserve {
            Ok(Reserve::Granted(hold)) => {
                let cap = super::clamp_output(hold.amount - estimate, max_output);
                if let Ok(mut o) = turn.outstanding.lock() {
                    *o = Some(hold.clone());
                }
                turn.first_call = (hold, cap);
                turn.allowed_tools = next.allowed_tools;
            }
            refused => {
                if let Err(e) = &refused {
                    tracing::error!(error = %e, "reserving budget for a resumed turn failed");
                }
                self.metrics.budget_refusals.inc();
                self.release_resumed(&resume, Vec::new(), Vec::new()).await;
                let _ = events
                    .send(TurnEvent::Done {
                        message_id: None,
                        finish_reason: FinishReason::BudgetExhausted,
                    })
                    .await;
                return;
            }
        }
        // The loop announces a turn it did not start itself; this one is announced above.
        let (inner_tx, mut inner_rx) = mpsc::channel(EVENT_BUFFER);
        let forward = tokio::spawn(async move {
            let mut first = true;
            while let Some(e) = inner_rx.recv().await {
                if std::mem::take(&mut first) && matches!(e, TurnEvent::TurnStart { .. }) {
                    continue;
                }
                if events.send(e).await.is_err() {
                    break;
                }
            }
        });
        self.run(turn, inner_tx, control).await;
        let _ = forward.await;
    }
}
