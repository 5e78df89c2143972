//! A turn's life: a new turn ([`spawn`]) and one resumed after its approvals
//! ([`spawn_resumed`]) go through one supervisor, which registers
//! the turn (so any process can cancel it), runs it on a task of its own under its
//! `invoke_agent` span, and when that task panics ends its log and releases its claim and
//! whatever hold it had. Routes only translate HTTP.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tracing::Instrument;
use uuid::Uuid;

use super::engine::{PreparedTurn, TurnEngine};
use super::events::{ErrorEvent, TurnEvent};
use super::turn_log::{EventSink, TurnLog};
use crate::cluster::TurnControl;
use crate::db::models::budget::Hold;
use crate::turn::approval::sql_step::Resume;

/// Whose turn it is and what to release if its task panics.
struct Supervised {
    turn_id: Uuid,
    conversation_id: Uuid,
    user_id: Uuid,
    /// The reservation not yet settled (a resumed turn starts holding none).
    outstanding: Option<Arc<Mutex<Option<Hold>>>>,
}

/// Starts a prepared turn and returns its event log (follow it with
/// [`TurnEngine::follow_started`]). The turn runs to its end whether or not anyone
/// follows.
pub(super) fn spawn(engine: &TurnEngine, prepared: PreparedTurn) -> EventSink {
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = engine.catalogue.now().provider_name_of(&prepared.plan.model),
        gen_ai.request.model = %prepared.plan.model,
        gen_ai.conversation.id = %prepared.who.conversation_id,
    );
    let who = Supervised {
        turn_id: prepared.who.turn_id,
        conversation_id: prepared.who.conversation_id,
        user_id: prepared.who.user_id,
        outstanding: Some(prepared.who.outstanding.clone()),
    };
    let running = engine.clone();
    supervise(engine, who, span, move |log, control| async move {
        crate::turn::run::run(&running, prepared, log, control).await;
    })
}

/// Runs a decided step on, on a task of its own; returns its event log (follow it with
/// [`TurnEngine::follow_resumed`]). The turn is registered under its own id, so cancel
/// and re-attaching reach it.
pub(super) fn spawn_resumed(engine: &TurnEngine, resume: Resume) -> EventSink {
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = tracing::field::Empty,
        gen_ai.conversation.id = %resume.conversation_id,
        resumed = true,
    );
    let who = Supervised {
        turn_id: resume.turn_id,
        conversation_id: resume.conversation_id,
        user_id: resume.user_id,
        outstanding: None,
    };
    let running = engine.clone();
    supervise(engine, who, span, move |log, control| async move {
        crate::turn::approval::resume::run(&running, resume, log, control).await;
    })
}

fn supervise<F, Fut>(engine: &TurnEngine, who: Supervised, span: tracing::Span, run: F) -> EventSink
where
    F: FnOnce(EventSink, TurnControl) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let log = TurnLog::new(who.turn_id);
    let (control, guard) =
        engine
            .turns
            .register(who.conversation_id, who.turn_id, who.user_id, log.clone());
    let events = log.clone();
    let running = tokio::spawn(
        async move {
            let _guard = guard;
            run(events, control).await;
        }
        .instrument(span),
    );
    let engine = engine.clone();
    let ended = log.clone();
    tokio::spawn(async move {
        if let Err(e) = running.await {
            if e.is_panic() {
                ended.push(TurnEvent::Error(Box::new(ErrorEvent {
                    code: "interrupted".into(),
                    message: "the reply to this message did not complete".into(),
                })));
                let conversation_id = who.conversation_id;
                tracing::error!(%conversation_id, "a turn panicked; releasing its budget and conversation");
                let hold = who
                    .outstanding
                    .and_then(|o| o.lock().ok().and_then(|mut o| o.take()));
                crate::turn::store::abandon(&engine, who.turn_id, conversation_id, hold).await;
            }
        }
    });
    log
}
