//! One agent turn: call the model, run the tools it asks for, feed the results back, repeat
//! until it answers or a hard stop (iterations, repeated tool failures, cancellation, the
//! turn deadline, shutdown). Records its [`TurnEvent`]s in its log as it goes, for whoever
//! follows it; a client leaving does not stop it. Each finished step is stored before the
//! next model call ([`Step::commit`]); `done` is sent only once the whole turn is stored.
//! What a step may do is the turn's [`Plan`]; what it does is [`crate::turn::step`].

use std::collections::HashMap;
use std::time::Instant;

use crate::cluster::control::{StopReason, TurnControl};
use crate::llm::ChatMessage;
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::events::{FinishReason, TurnEvent};
use crate::turn::pending_start::PendingStart;
use crate::turn::plan::Plan;
use crate::turn::step::answer::Charge;
use crate::turn::step::call::CallPolicy;
use crate::turn::step::commit::{final_event, millis, unsaved, Ending, TurnRecord};
use crate::turn::step::Step;
use crate::turn::store::{self, Persisted};
use crate::turn::turn_log::EventSink;

/// Runs the turn to its end, recording events in `events`, then stores its messages and
/// releases the conversation. Never panics; never runs past the turn deadline.
pub(super) async fn run(
    engine: &TurnEngine,
    turn: PreparedTurn,
    events: EventSink,
    control: TurnControl,
) {
    let deadline = {
        let control = control.clone();
        let limit = engine.settings.turn_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            control.stop(StopReason::Deadline);
        })
    };
    let started = Instant::now();
    let mut record = TurnRecord::default();
    // The turn owns its only copy of the history (an open stream holds it for its life).
    let PreparedTurn {
        who,
        mut plan,
        input,
        first_call,
        start,
        wants_title,
    } = turn;
    if start.is_none() {
        // Already committed: announce it now (otherwise the commit does).
        let _ = events
            .send(TurnEvent::TurnStart {
                message_id: who.user_message_id,
            })
            .await;
    }
    let step = Step::new(engine, &who, &events, &control);
    let ending = iterate(&step, &mut plan, input, (first_call, start), &mut record).await;
    let label = match &ending {
        Ending::Finished(reason) => reason.as_str(),
        Ending::Failed { .. } | Ending::Unstored => "error",
    };
    let metrics = &engine.metrics;
    metrics.chat_turns.with_label_values(&[label]).inc();
    metrics
        .turn_duration
        .observe(started.elapsed().as_secs_f64());
    if record.overrun > 0 {
        metrics
            .budget_overrun_tokens
            .with_label_values(&[&plan.model])
            .inc_by(record.overrun);
    }
    deadline.abort();

    let shutdown = control.stopped() == Some(StopReason::Shutdown);
    let last = final_event(&ending, record.last_assistant, shutdown);
    let persisted = if matches!(ending, Ending::Unstored) {
        // Unconfirmed is not always rolled back: the connection may have died with the
        // COMMIT on its way. Releasing is right either way: it only touches this turn's
        // claim, and settling a hold that is not there charges nothing.
        let outstanding = who.outstanding.lock().ok().and_then(|mut o| o.take());
        store::abandon(engine, who.turn_id, who.conversation_id, outstanding).await;
        Persisted::Lost
    } else {
        let deadline = started + engine.settings.turn_timeout;
        store::persist(engine, &who, record, deadline, &last).await
    };
    let stored = matches!(persisted, Persisted::Stored);
    // A stored answer: the conversation may get its title (after `done`, in the
    // background). API calls carry their own titles.
    let titled = stored
        && engine.settings.auto_titles
        && matches!(ending, Ending::Finished(FinishReason::Stop))
        && plan.may_title()
        && wants_title;
    let event = match (ending, persisted) {
        (_, Persisted::Salvaged(event)) => event,
        (Ending::Finished(_) | Ending::Failed { .. }, Persisted::Lost) => unsaved(),
        _ => last,
    };
    let _ = events.send(event).await;
    engine.announce(&events);
    if titled {
        crate::turn::title::spawn(engine, who.user_id, who.conversation_id, plan.model);
    }
}

/// The steps of the turn: the first call is reserved by the start (`first`, with the start's
/// pending commit), each next one by the commit of the step before it.
async fn iterate(
    step: &Step<'_>,
    plan: &mut Plan,
    mut messages: Vec<ChatMessage>,
    first: ((crate::db::models::budget::Hold, u32), Option<PendingStart>),
    record: &mut TurnRecord,
) -> Ending {
    let (first_call, mut start) = first;
    let mut next = Some(first_call);
    let mut consecutive_failures: HashMap<String, u32> = HashMap::new();
    let max_iterations = step.engine.settings.max_iterations;
    for iteration in 1..=max_iterations {
        let (hold, max_tokens) = match next.take() {
            Some(first) => first,
            None => match step.commit(plan, &messages, record).await {
                Ok(Some(granted)) => {
                    plan.renarrow(granted.role);
                    granted.call
                }
                Ok(None) => return Ending::Finished(FinishReason::BudgetExhausted),
                Err(e) => return e,
            },
        };
        if let Ok(mut o) = step.who.outstanding.lock() {
            *o = Some(hold.clone());
        }
        // The role as this step's commit read it: an admin's revocation stops the turn
        // before its next call; the reservation just granted is settled at nothing.
        if !plan.allows(&plan.model) {
            record.pending = Some((hold, crate::db::models::budget::Spend::default()));
            return Ending::Failed {
                code: "model_not_allowed".into(),
                message: format!(
                    "the role `{}` may no longer use the model `{}`",
                    plan.role.name, plan.model
                ),
            };
        }
        let input_estimate = plan.count_input(&messages);
        let request = plan.request(messages.clone(), max_tokens);
        step.events.begin_step(iteration);
        let started = Instant::now();
        let policy = CallPolicy {
            role_models: &plan.role.models,
            money: hold.money.as_ref(),
            caller: step.who.user_id,
        };
        let call = step
            .call(request, input_estimate, start.take(), policy)
            .await;
        let charge = Charge {
            hold,
            input_estimate,
            elapsed: millis(started.elapsed()),
        };
        let answer = match step.answer(plan, call, charge, record).await {
            Ok(answer) => answer,
            Err(ending) => return ending,
        };
        let ran = step.tools(
            plan,
            answer,
            record,
            &mut messages,
            &mut consecutive_failures,
        );
        if let Some(ending) = ran.await {
            return ending;
        }
        if step.control.stopped().is_some() {
            return Ending::Finished(FinishReason::Cancelled);
        }
        if iteration == max_iterations {
            return Ending::Finished(FinishReason::MaxIterations);
        }
    }
    // Only without any model call (a limit of zero iterations) is the start still here; its
    // reservation is the one to release if the start did not commit.
    if let (Some((hold, _)), Ok(mut o)) = (next, step.who.outstanding.lock()) {
        *o = Some(hold);
    }
    if let Some(start) = start {
        if start.commit(step.events).await.is_err() {
            return Ending::Unstored;
        }
    }
    Ending::Finished(FinishReason::MaxIterations)
}
