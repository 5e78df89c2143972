//! A conversation's title, made by one short model call after its first answer, in the
//! background: it never delays `done` nor the next message. The call is reserved and settled
//! against the user's budget and recorded in the usage ledger like any other; when the
//! budget does not allow it, or the model fails or is slow, the default title stays (the
//! next answer tries again). A title the user chose is never replaced.
//!
//! A title is a nicety, turns are the work: it steps back under pressure. It only takes a
//! pooled connection that is free right now ([`crate::db::Pool::get_free_now`]), never
//! waiting in the pool's queue behind turns; with none free it is skipped (the next answer
//! tries again) or, once the call is made, its store is deferred a little. Every title ends
//! in one outcome of `agentchat_titles_total{outcome}`, and none of them is an error log.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use uuid::Uuid;

use crate::budget;
use crate::db::conflict::{Retry, Transaction};
use crate::db::models::budget::{self as budget_db, Hold, Reserve, ReserveAsk};
use crate::db::models::usage::NewUsage;
use crate::db::models::{conversation, message};
use crate::llm::{self, title, StreamEvent};
use crate::turn::engine::TurnEngine;
use crate::turn::sql::title as title_sql;

/// The longest a title call may take; a slower model leaves the default title.
pub const TITLE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a made title waits for a free connection to be stored, asking every
/// [`STORE_RETRY`] or so; past it the title is given up (its hold expires by itself).
const STORE_DEFER: Duration = Duration::from_secs(30);
const STORE_RETRY: Duration = Duration::from_millis(200);

/// How a title task ended: the label set of `agentchat_titles_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A generated title was stored.
    Titled,
    /// The call failed, timed out or said nothing usable: charged, the default stays.
    KeptDefault,
    /// The budget did not allow the call.
    NoBudget,
    /// No free connection when the title would have started: skipped, the next answer
    /// tries again.
    Busy,
    /// Made, but it could not be stored (no free connection within [`STORE_DEFER`], or the
    /// database failed it).
    Unstored,
    /// Nothing to do: the user named the conversation, or it is gone or empty.
    NotNeeded,
}

impl Outcome {
    pub(crate) const ALL: [Self; 6] = [
        Self::Titled,
        Self::KeptDefault,
        Self::NoBudget,
        Self::Busy,
        Self::Unstored,
        Self::NotNeeded,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Titled => "titled",
            Self::KeptDefault => "kept_default",
            Self::NoBudget => "no_budget",
            Self::Busy => "busy",
            Self::Unstored => "unstored",
            Self::NotNeeded => "not_needed",
        }
    }
}

/// Conversations whose title call runs in this process: a second answer meanwhile does
/// not start another.
fn in_flight() -> &'static Mutex<HashSet<Uuid>> {
    static SET: OnceLock<Mutex<HashSet<Uuid>>> = OnceLock::new();
    SET.get_or_init(Default::default)
}

/// Takes the conversation out of [`in_flight`] when the title task ends (or is dropped).
struct InFlight(Uuid);

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut set) = in_flight().lock() {
            set.remove(&self.0);
        }
    }
}

/// What the title call is shown of the first question: its words, without the note naming
/// its files (a title made from it ended in "Attached"); the files' paths stand for a
/// question of files alone.
fn title_question(text: &str, files: &[crate::domain::Attachment]) -> String {
    if !text.trim().is_empty() || files.is_empty() {
        return text.to_owned();
    }
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    format!("Files: {}", paths.join(", "))
}

/// What a title call produced.
struct Made {
    text: String,
    input: u64,
    output: u64,
}

/// Makes the conversation's title in the background if it still has the default one.
pub(super) fn spawn(engine: &TurnEngine, user_id: Uuid, conversation_id: Uuid, model: String) {
    let fresh = in_flight()
        .lock()
        .map(|mut set| set.insert(conversation_id))
        .unwrap_or(false);
    if !fresh {
        return;
    }
    let guard = InFlight(conversation_id);
    let agent = engine.clone();
    tokio::spawn(async move {
        let _guard = guard;
        let outcome = match make_title(&agent, user_id, conversation_id, &model).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(error = %e, %conversation_id, "making a conversation title failed");
                Outcome::Unstored
            }
        };
        agent
            .metrics
            .titles
            .with_label_values(&[outcome.label()])
            .inc();
    });
}

async fn make_title(
    engine: &TurnEngine,
    user_id: Uuid,
    conversation_id: Uuid,
    model: &str,
) -> anyhow::Result<Outcome> {
    // Free right now or not at all: a title never queues for the pool behind turns.
    let Ok(mut conn) = engine.pool.get_free_now().await else {
        tracing::debug!(%conversation_id, "no free connection for a title; the next answer tries again");
        return Ok(Outcome::Busy);
    };
    let Some(conv) = conversation::find_owned(&mut conn, conversation_id, user_id).await? else {
        return Ok(Outcome::NotNeeded);
    };
    if !conv.title_auto {
        return Ok(Outcome::NotNeeded);
    }
    let (Some(first), Some(answer)) =
        message::first_exchange(&mut conn, conversation_id, title::EXCERPT_CHARS).await?
    else {
        return Ok(Outcome::NotNeeded);
    };
    let question = title_question(
        &first.text,
        &crate::turn::attachments::from_column(first.attachments),
    );
    let request = title::request(model, &question, &answer);
    let estimate: u64 = request
        .messages
        .iter()
        .map(crate::turn::context::cost)
        .sum();
    let input = budget::with_margin(estimate);
    let want = input + i64::from(title::TITLE_MAX_TOKENS);
    let ask = ReserveAsk {
        user_id,
        limit: budget_db::limit_for(&mut conn, user_id).await?,
        input,
        price: engine
            .catalogue
            .now()
            .get(model)
            .and_then(|m| m.price_at(chrono::Utc::now())),
        want,
        need: want,
        now: (engine.clock)(),
        hold_ttl: TITLE_TIMEOUT + crate::turn::plan::STORE_GRACE,
        process_id: engine.process_id,
        // Not a turn's: the title runs after its turn let the conversation go.
        turn: None,
    };
    let hold = match budget_db::reserve(&mut conn, &ask).await? {
        Reserve::Granted(hold) => hold,
        refused => {
            tracing::debug!(?refused, %conversation_id, "no budget for a title; the default stays");
            return Ok(Outcome::NoBudget);
        }
    };
    // No connection is held while the model answers.
    drop(conn);
    let made = tokio::time::timeout(TITLE_TIMEOUT, call_for_title(engine, request, estimate)).await;
    let made = match made {
        Ok(Ok(made)) => Some(made),
        Ok(Err(e)) => {
            tracing::info!(error = %e, %conversation_id, "the title call failed; the default stays");
            None
        }
        Err(_) => {
            tracing::info!(%conversation_id, "the title call timed out; the default stays");
            None
        }
    };
    store_title(engine, conversation_id, model, hold, made).await
}

/// Streams the title call to its end.
async fn call_for_title(
    engine: &TurnEngine,
    request: llm::ChatRequest,
    estimate: u64,
) -> Result<Made, llm::LlmError> {
    let model = request.model.clone();
    let (route, request) = engine.catalogue.now().route(request)?;
    let provider = route.client.provider_name();
    let mut stream = route.client.stream_chat(request).await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(delta) => text.push_str(&delta),
            StreamEvent::ToolCallStart { .. } => {}
            StreamEvent::Completed { usage, .. } => {
                let (input, output) = match usage {
                    Some(u) if u.input_tokens > 0 => (
                        u.input_tokens,
                        u.output_tokens.max(llm::estimate_tokens(&text)),
                    ),
                    _ => (estimate, llm::estimate_tokens(&text)),
                };
                let m = &engine.metrics;
                m.model_calls
                    .with_label_values(&[provider, &model, "ok"])
                    .inc();
                m.tokens.with_label_values(&[&model, "input"]).inc_by(input);
                m.tokens
                    .with_label_values(&[&model, "output"])
                    .inc_by(output);
                return Ok(Made {
                    text,
                    input,
                    output,
                });
            }
        }
    }
    Err(llm::LlmError::StreamEndedEarly)
}

/// Stores the title (if one was made), settles the call's hold and records its usage, in one
/// transaction on a connection that is free when asked ([`free_connection`]); a lost
/// conflict is retried ([`crate::db::conflict`]).
async fn store_title(
    engine: &TurnEngine,
    conversation_id: Uuid,
    model: &str,
    hold: Hold,
    made: Option<Made>,
) -> anyhow::Result<Outcome> {
    let (input, output) = made.as_ref().map_or((0, 0), |m| (m.input, m.output));
    let actual = i64::try_from(input.saturating_add(output)).unwrap_or(i64::MAX);
    let charged = if hold.is_limited() {
        actual.min(hold.amount)
    } else {
        actual
    };
    let cost = engine
        .catalogue
        .now()
        .get(model)
        .and_then(|m| m.price_at(chrono::Utc::now()))
        .map(|p| (p.cost(&llm::Usage::new(input, output).counts()), p.currency));
    let spend = budget_db::Spend {
        tokens: actual,
        cost: cost.as_ref().map_or(rust_decimal::Decimal::ZERO, |c| c.0),
    };
    let row = NewUsage {
        user_id: hold.user_id,
        conversation_id: Some(conversation_id),
        message_id: None,
        model: model.to_owned(),
        fallback_from: None,
        fallback_reason: None,
        input_tokens: i64::try_from(input).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(output).unwrap_or(i64::MAX),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        charged,
        cost,
    };
    let rows = if actual > 0 { vec![row] } else { Vec::new() };
    let new_title = made.and_then(|m| title::clean(&m.text));
    let mut retry = Retry::new(Transaction::Title, &engine.metrics.db_conflicts);
    loop {
        let Some(mut conn) = free_connection(engine).await else {
            tracing::info!(%conversation_id, "no free connection to store a title; the default stays");
            return Ok(Outcome::Unstored);
        };
        let stored = title_sql::store(
            &mut conn,
            conversation_id,
            new_title.as_deref(),
            &hold,
            spend,
            &rows,
        )
        .await;
        match stored {
            Ok(()) if new_title.is_some() => return Ok(Outcome::Titled),
            Ok(()) => return Ok(Outcome::KeptDefault),
            Err(e) if retry.again(&e).await => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A connection that is free right now, asking again every [`STORE_RETRY`] (jittered) for up
/// to [`STORE_DEFER`]: the made title waits for a quiet moment, not in the pool's queue.
async fn free_connection(engine: &TurnEngine) -> Option<crate::db::PooledConn> {
    let until = tokio::time::Instant::now() + STORE_DEFER;
    loop {
        if let Ok(conn) = engine.pool.get_free_now().await {
            return Some(conn);
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(STORE_RETRY.mul_f64(0.5 + rand::random::<f64>())).await;
    }
}
