//! One model call to one catalogue model: streamed, forwarded as text deltas, stopped by the
//! turn's control, with its span and metrics. Which model is called, and what happens when it
//! fails before its first token, is [`super::call`]'s business.

use std::time::Instant;

use futures_util::StreamExt;
use tracing::Instrument;

use crate::catalogue::CatalogueModel;
use crate::cluster::control::StopReason;
use crate::domain::pricing::Price;
use crate::llm::{self, ChatRequest, LlmError, StreamEvent};
use crate::turn::events::TurnEvent;
use crate::turn::pending_start::PendingStart;
use crate::turn::step::Step;

/// How one model call ended.
pub(in crate::turn) enum ModelOutcome {
    Completed {
        text: String,
        calls: Vec<llm::ToolCall>,
        usage: llm::Usage,
        response_model: Option<String>,
        finish_reason: llm::FinishReason,
    },
    Stopped {
        text: String,
        reason: StopReason,
    },
    Failed {
        text: String,
        error: LlmError,
        /// The model had begun its answer (text or a tool call) before it failed: nothing
        /// is retried on a fallback then.
        streamed: bool,
    },
    /// The turn's start did not commit; the call was dropped unread.
    Unstored(diesel::result::Error),
}

/// One model call as the chain of fallbacks makes it ([`super::call`]).
pub(super) struct Attempt<'a> {
    /// The catalogue model called.
    pub model: &'a CatalogueModel,
    /// Called once, when the model's answer begins (its first text, tool call, or a
    /// complete answer with neither).
    pub on_first_token: &'a (dyn Fn() + Sync),
    /// The request as its provider reads it (upstream id, output cap).
    pub request: ChatRequest,
    /// The model's price in force (none: unpriced).
    pub price: Option<Price>,
    /// The model the turn asked for, when this call is its fallback, and why.
    pub fallback_from: Option<(&'a str, &'a str)>,
}

impl Step<'_> {
    /// One model call inside a `chat {model}` client span, with its metrics.
    pub(super) async fn attempt(
        &self,
        call: Attempt<'_>,
        input_estimate: u64,
        start: Option<PendingStart>,
    ) -> ModelOutcome {
        let Attempt {
            model: route,
            on_first_token,
            mut request,
            price,
            fallback_from,
        } = call;
        if !route.takes_images() {
            // A fallback that reads text only: the note after the message names the files.
            for m in &mut request.messages {
                m.images.clear();
            }
        }
        let model = route.name.clone();
        let provider = route.client.provider_name();
        let upstream_model = request.model.clone();
        let span = tracing::info_span!(
            "chat",
            otel.name = %format!("chat {upstream_model}"),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.request.model = %upstream_model,
            agentchat.model = %model,
            agentchat.model.provider = %route.provider,
            agentchat.model.fallback_from = fallback_from.map(|(from, _)| from),
            agentchat.model.fallback_reason = fallback_from.map(|(_, why)| why),
            gen_ai.request.max_tokens = request.max_tokens,
            server.address = route.client.server_address().unwrap_or_default(),
            gen_ai.usage.cache_read.input_tokens = tracing::field::Empty,
            gen_ai.usage.cache_creation.input_tokens = tracing::field::Empty,
            agentchat.cost = tracing::field::Empty,
            agentchat.cost.currency = tracing::field::Empty,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let started = Instant::now();
        let first = std::sync::OnceLock::new();
        let limits = (
            route.context_window,
            u64::from(request.max_tokens.unwrap_or(route.max_output)),
        );
        let mut outcome = self
            .stream_model(
                (&route.client, request),
                input_estimate,
                start,
                (&first, on_first_token),
            )
            .instrument(span.clone())
            .await;
        if let ModelOutcome::Completed { usage, .. } = &mut outcome {
            let (within, cut) = usage.within(limits.0, limits.1);
            if cut {
                tracing::warn!(model = %model, reported = ?usage, kept = ?within,
                    "the provider reported more tokens than the call could use; kept the most it could");
                *usage = within;
            }
        }
        let m = &self.engine.metrics;
        let labels = |outcome: &str| [provider, model.as_str(), outcome].map(str::to_owned);
        let outcome_label = match &outcome {
            ModelOutcome::Completed {
                usage,
                response_model,
                finish_reason,
                ..
            } => {
                span.record(
                    "gen_ai.response.model",
                    response_model.as_deref().unwrap_or(&model),
                );
                span.record("gen_ai.response.finish_reasons", finish_reason.as_str());
                span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                span.record(
                    "gen_ai.usage.cache_read.input_tokens",
                    usage.cache_read_tokens,
                );
                span.record(
                    "gen_ai.usage.cache_creation.input_tokens",
                    usage.cache_write_tokens,
                );
                m.tokens
                    .with_label_values(&[&model, "input"])
                    .inc_by(usage.input_tokens);
                m.tokens
                    .with_label_values(&[&model, "output"])
                    .inc_by(usage.output_tokens);
                m.tokens
                    .with_label_values(&[&model, "cache_read"])
                    .inc_by(usage.cache_read_tokens);
                m.tokens
                    .with_label_values(&[&model, "cache_write"])
                    .inc_by(usage.cache_write_tokens);
                if let Some(price) = &price {
                    let cost = price.cost(&usage.counts());
                    span.record("agentchat.cost", cost.to_string());
                    span.record("agentchat.cost.currency", price.currency.as_str());
                    m.model_cost
                        .with_label_values(&[&model, &price.currency])
                        .inc_by(rust_decimal::prelude::ToPrimitive::to_f64(&cost).unwrap_or(0.0));
                }
                "ok"
            }
            ModelOutcome::Stopped { .. } | ModelOutcome::Unstored(_) => "cancelled",
            ModelOutcome::Failed { error, .. } => {
                span.record("error.type", error.code());
                span.record("otel.status_code", "ERROR");
                if matches!(error, LlmError::Timeout(_)) {
                    "timeout"
                } else {
                    "error"
                }
            }
        };
        let l = labels(outcome_label);
        m.model_calls
            .with_label_values(&[&l[0], &l[1], &l[2]])
            .inc();
        m.model_duration
            .with_label_values(&[provider, &model])
            .observe(started.elapsed().as_secs_f64());
        if let Some(t) = first.get() {
            m.model_ttft
                .with_label_values(&[provider, &model])
                .observe(t.duration_since(started).as_secs_f64());
        }
        outcome
    }

    /// Streams one model call, forwarding text as it arrives. Nothing from a stream that
    /// ends before the model's message is complete is executed. The first call of a turn
    /// opens while the turn's start commits, and reads nothing before the commit succeeded.
    async fn stream_model(
        &self,
        (client, request): (&std::sync::Arc<dyn crate::llm::LlmProvider>, ChatRequest),
        input_estimate: u64,
        start: Option<PendingStart>,
        (first, on_first_token): (&std::sync::OnceLock<Instant>, &(dyn Fn() + Sync)),
    ) -> ModelOutcome {
        let (events, control) = (self.events, self.control);
        let stopped = |text: String| ModelOutcome::Stopped {
            text,
            reason: control.stopped().unwrap_or(StopReason::Cancelled),
        };
        let open = async {
            tokio::select! {
                r = client.stream_chat(request) => Some(r),
                _ = control.token.cancelled() => None,
            }
        };
        let opened = match start {
            None => open.await,
            Some(start) => {
                // The commit is never cut short: a cancelled turn must still know whether
                // its start is stored before it stores the rest.
                let (committed, opened) = futures_util::join!(start.commit(events), open);
                if let Err(e) = committed {
                    return ModelOutcome::Unstored(e);
                }
                opened
            }
        };
        let Some(opened) = opened else {
            return stopped(String::new());
        };
        let mut stream = match opened {
            Ok(s) => s,
            Err(error) => {
                return ModelOutcome::Failed {
                    text: String::new(),
                    error,
                    streamed: false,
                }
            }
        };
        let mut text = String::new();
        let mut streamed = false;
        let begin = |streamed: &mut bool| {
            if !std::mem::replace(streamed, true) {
                on_first_token();
            }
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = control.token.cancelled() => return stopped(text),
                n = stream.next() => n,
            };
            let _ = first.set(Instant::now());
            match next {
                Some(Ok(StreamEvent::TextDelta(delta))) => {
                    begin(&mut streamed);
                    text.push_str(&delta);
                    let _ = events.send(TurnEvent::TextDelta { text: delta }).await;
                }
                Some(Ok(StreamEvent::ToolCallStart { .. })) => begin(&mut streamed),
                Some(Ok(StreamEvent::Completed {
                    tool_calls,
                    usage,
                    response_model,
                    finish_reason,
                })) => {
                    begin(&mut streamed);
                    // Providers that report no usage (or zeros) are charged a local count.
                    let local_output = || {
                        llm::estimate_tokens(&text)
                            + tool_calls
                                .iter()
                                .map(|c| llm::estimate_tokens(&c.arguments))
                                .sum::<u64>()
                    };
                    let usage = match usage {
                        Some(u) if u.input_tokens > 0 => llm::Usage {
                            output_tokens: if u.output_tokens == 0 {
                                local_output()
                            } else {
                                u.output_tokens
                            },
                            ..u
                        },
                        _ => llm::Usage::new(input_estimate, local_output()),
                    };
                    return ModelOutcome::Completed {
                        text,
                        calls: tool_calls,
                        usage,
                        response_model,
                        finish_reason,
                    };
                }
                Some(Err(error)) => {
                    return ModelOutcome::Failed {
                        text,
                        error,
                        streamed,
                    }
                }
                None => {
                    return ModelOutcome::Failed {
                        text,
                        error: LlmError::StreamEndedEarly,
                        streamed,
                    }
                }
            }
        }
    }
}
