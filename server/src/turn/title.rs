//! A conversation's title, made by one short model call after its first answer, in the
//! background: it never delays `done` nor the next message. The call is reserved and settled
//! against the user's budget and recorded in the usage ledger like any other; when the
//! budget does not allow it, or the model fails or is slow, the default title stays (the
//! next answer tries again). A title the user chose is never replaced.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use futures_util::StreamExt;
use uuid::Uuid;

use crate::budget;
use crate::db::models::budget::{self as budget_db, Hold, Reserve, ReserveAsk};
use crate::db::models::usage::{self, NewUsage};
use crate::db::models::{conversation, message};
use crate::llm::{self, title, StreamEvent};
use crate::turn::engine::TurnEngine;

/// The longest a title call may take; a slower model leaves the default title.
pub const TITLE_TIMEOUT: Duration = Duration::from_secs(20);

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

impl TurnEngine {
    /// Makes the conversation's title in the background if it still has the default one.
    pub(super) fn spawn_title(&self, user_id: Uuid, conversation_id: Uuid, model: String) {
        let fresh = in_flight()
            .lock()
            .map(|mut set| set.insert(conversation_id))
            .unwrap_or(false);
        if !fresh {
            return;
        }
        let guard = InFlight(conversation_id);
        let agent = self.clone();
        tokio::spawn(async move {
            let _guard = guard;
            if let Err(e) = agent.make_title(user_id, conversation_id, &model).await {
                tracing::warn!(error = %e, %conversation_id, "making a conversation title failed");
            }
        });
    }

    async fn make_title(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        model: &str,
    ) -> anyhow::Result<()> {
        let mut conn = self.pool.get().await?;
        let Some(conv) = conversation::find_owned(&mut conn, conversation_id, user_id).await?
        else {
            return Ok(());
        };
        if !conv.title_auto {
            return Ok(());
        }
        let (Some(first), Some(answer)) =
            message::first_exchange(&mut conn, conversation_id, title::EXCERPT_CHARS).await?
        else {
            return Ok(());
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
            price: self
                .catalogue
                .now()
                .get(model)
                .and_then(|m| m.price_at(chrono::Utc::now())),
            want,
            need: want,
            now: (self.clock)(),
            hold_ttl: TITLE_TIMEOUT + crate::turn::limits::STORE_GRACE,
            process_id: self.process_id,
            // Not a turn's: the title runs after its turn let the conversation go.
            turn_id: None,
        };
        let hold = match budget_db::reserve(&mut conn, &ask).await? {
            Reserve::Granted(hold) => hold,
            refused => {
                tracing::debug!(?refused, %conversation_id, "no budget for a title; the default stays");
                return Ok(());
            }
        };
        // No connection is held while the model answers.
        drop(conn);
        let made =
            tokio::time::timeout(TITLE_TIMEOUT, self.call_for_title(request, estimate)).await;
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
        self.store_title(conversation_id, model, hold, made).await
    }

    /// Streams the title call to its end.
    async fn call_for_title(
        &self,
        request: llm::ChatRequest,
        estimate: u64,
    ) -> Result<Made, llm::LlmError> {
        let model = request.model.clone();
        let (route, request) = self.catalogue.now().route(request)?;
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
                    let m = &self.metrics;
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

    /// Settles the call's hold, records its usage and stores the title, in one transaction.
    async fn store_title(
        &self,
        conversation_id: Uuid,
        model: &str,
        hold: Hold,
        made: Option<Made>,
    ) -> anyhow::Result<()> {
        let (input, output) = made.as_ref().map_or((0, 0), |m| (m.input, m.output));
        let actual = i64::try_from(input.saturating_add(output)).unwrap_or(i64::MAX);
        let charged = if hold.is_limited() {
            actual.min(hold.amount)
        } else {
            actual
        };
        let cost = self
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
        let new_title = made.and_then(|m| title::clean(&m.text));
        let mut conn = self.pool.get().await?;
        conn.transaction::<_, diesel::result::Error, _>(|conn| {
            async move {
                budget_db::settle(conn, &hold, spend).await?;
                if actual > 0 {
                    usage::insert_many(conn, std::slice::from_ref(&row)).await?;
                }
                if let Some(t) = new_title {
                    conversation::set_generated_title(conn, conversation_id, &t).await?;
                }
                Ok(())
            }
            .scope_boxed()
        })
        .await?;
        Ok(())
    }
}
