//! A model call with its fallbacks: the model the turn asked for, unless its provider's
//! circuit breaker is open; then, if it fails before its first token, each of its fallbacks
//! in order that the role may use and (under a money budget) the hold can pay for at its own
//! price. Once a model has begun to answer nothing is retried. Every call's outcome feeds
//! its provider's breaker; opening and closing are shared with the other processes.

use std::sync::Arc;

use crate::catalogue::breaker::{counts_against, Admission, Transition};
use crate::catalogue::CatalogueModel;
use crate::db::models::budget_money::MoneyHold;
use crate::domain::pricing::Price;
use crate::llm::{ChatRequest, LlmError};
use crate::turn::pending_start::PendingStart;
use crate::turn::step::attempt::{Attempt, ModelOutcome};
use crate::turn::step::Step;
use crate::turn::turn_log::EventSink;

/// What a fallback must satisfy besides being configured.
#[derive(Clone, Copy, Default)]
pub(in crate::turn) struct CallPolicy<'a> {
    /// The role's `models` as this step's commit read it.
    pub role_models: &'a [String],
    /// The money this call holds: a fallback must be priced in its currency, and its output
    /// is capped to what the hold pays for at the fallback's price.
    pub money: Option<&'a MoneyHold>,
    /// Whose call it is: a provider's breaker opens only on failures of several users.
    pub caller: uuid::Uuid,
}

/// Which model a call was charged to.
#[derive(Debug, Clone, Default)]
pub(in crate::turn) struct Answered {
    /// The catalogue model that answered (or was tried last).
    pub model: String,
    /// Its price in force (none: unpriced).
    pub price: Option<Price>,
    /// When a fallback answered: the model asked for, and why it did not answer.
    pub fallback: Option<(String, String)>,
}

/// A model call's outcome and the model it is charged to.
pub(in crate::turn) struct ModelCall {
    pub outcome: ModelOutcome,
    pub answered: Answered,
}

impl Step<'_> {
    /// Calls the request's model, or its fallbacks when it cannot answer before its first
    /// token. The turn's pending start goes with the first call made (or is stored alone
    /// when none could be made).
    pub(in crate::turn) async fn call(
        &self,
        request: ChatRequest,
        input_estimate: u64,
        mut start: Option<PendingStart>,
        policy: CallPolicy<'_>,
    ) -> ModelCall {
        let (events, control) = (self.events, self.control);
        let asked = request.model.clone();
        let catalogue = self.engine.catalogue.now();
        let Some(primary) = catalogue.get(&asked).cloned() else {
            let error = LlmError::Config(format!(
                "the model `{}` is no longer offered",
                crate::llm::truncate_chars(&asked, 64)
            ));
            return ModelCall {
                outcome: fail_alone(error, start, events).await,
                answered: Answered {
                    model: asked,
                    ..Answered::default()
                },
            };
        };
        let now = chrono::Utc::now();
        let chain: Vec<Arc<CatalogueModel>> = std::iter::once(primary.clone())
            .chain(
                primary
                    .fallbacks
                    .iter()
                    .filter_map(|f| catalogue.get(f).cloned()),
            )
            .collect();
        // Why the models before the one being tried did not answer.
        let mut passed_over: Option<String> = None;
        let mut last: Option<(ModelOutcome, Answered)> = None;
        let mut refused: Option<LlmError> = None;
        let asked_max = request.max_tokens;
        // The request (and the history in it) is copied only for a model that may be
        // followed by a fallback; the last one takes it.
        let mut request = Some(request);
        let last_index = chain.len() - 1;
        for (i, model) in chain.iter().enumerate() {
            let price = model.price_at(now);
            let Some(max_tokens) =
                fits(i, model, price.as_ref(), asked_max, policy, input_estimate)
            else {
                if i == 0 {
                    passed_over = Some("unpriced".to_owned());
                }
                continue;
            };
            let breaker = self.engine.breakers.get(&model.provider);
            let admission = breaker.as_ref().map_or(Admission::Pass, |b| b.admit());
            if admission == Admission::Refused {
                refused.get_or_insert(LlmError::CircuitOpen(model.provider.clone()));
                passed_over.get_or_insert_with(|| "circuit_open".to_owned());
                continue;
            }
            let fallback = (i > 0).then(|| {
                let why = passed_over.clone().unwrap_or_else(|| "error".to_owned());
                (asked.clone(), why)
            });
            // The provider answered: its breaker hears so at the first token, not at the
            // end of a long answer (a probe holds the others back until then).
            let first_token = || {
                if let Some(change) = breaker.as_ref().and_then(|b| b.succeeded(admission)) {
                    self.breaker_changed(&model.provider, change);
                }
            };
            let base = if i < last_index {
                request.clone()
            } else {
                request.take()
            };
            let Some(base) = base else { break };
            let call = Attempt {
                model,
                on_first_token: &first_token,
                request: ChatRequest {
                    model: model.upstream_model.clone(),
                    max_tokens: Some(max_tokens),
                    ..base
                },
                price: price.clone(),
                fallback_from: fallback.as_ref().map(|(f, w)| (f.as_str(), w.as_str())),
            };
            let outcome = self.attempt(call, input_estimate, start.take()).await;
            let answered = Answered {
                model: model.name.clone(),
                price,
                fallback,
            };
            let failed_early = match &outcome {
                ModelOutcome::Completed { .. } => {
                    if let Some((from, why)) = &answered.fallback {
                        tracing::info!(model = %from, fallback = %model.name, reason = %why,
                            "a fallback model answered");
                        self.engine
                            .metrics
                            .model_fallbacks
                            .with_label_values(&[from, &model.name, why])
                            .inc();
                    }
                    false
                }
                ModelOutcome::Failed {
                    error, streamed, ..
                } => {
                    // After its first token a probe has already closed the breaker: what
                    // fails then counts like any call's failure.
                    let as_admitted = if *streamed {
                        Admission::Pass
                    } else {
                        admission
                    };
                    match breaker.as_ref() {
                        Some(b) if counts_against(error) => {
                            if let Some(change) = b.failed(error, as_admitted, policy.caller) {
                                self.breaker_changed(&model.provider, change);
                            }
                        }
                        Some(b) if as_admitted == Admission::Probe => b.abandon_probe(),
                        _ => {}
                    }
                    if !streamed && passed_over.is_none() {
                        passed_over = Some(error.code().to_owned());
                    }
                    !streamed
                }
                ModelOutcome::Stopped { .. } | ModelOutcome::Unstored(_) => {
                    if let (Some(b), Admission::Probe) = (breaker.as_ref(), admission) {
                        b.abandon_probe();
                    }
                    false
                }
            };
            if !failed_early || control.stopped().is_some() {
                return ModelCall { outcome, answered };
            }
            last = Some((outcome, answered));
        }
        if let Some((outcome, answered)) = last {
            return ModelCall { outcome, answered };
        }
        // No model could be called: every provider's breaker is open, or none fits the
        // money held (unpriced now, or priced in another currency).
        let error = refused.unwrap_or_else(|| {
            LlmError::Config(format!(
                "the model `{}` has no price the money budget can pay",
                primary.name
            ))
        });
        ModelCall {
            outcome: fail_alone(error, start, events).await,
            answered: Answered {
                model: asked,
                ..Answered::default()
            },
        }
    }

    /// A provider's breaker opened or closed here: logged, and told to every process.
    fn breaker_changed(&self, provider: &str, change: Transition) {
        match &change {
            Transition::Opened { until, reason, .. } => tracing::warn!(provider, %until, reason,
                "a model provider's circuit breaker opened; its models fall back until then"),
            Transition::Closed { .. } => {
                tracing::info!(provider, "a model provider's circuit breaker closed")
            }
        }
        crate::catalogue::breaker_sync::spawn_publish(
            self.engine.pool.clone(),
            provider.to_owned(),
            change,
        );
    }
}

/// The output cap the `i`th model of the chain is called with, or `None` when it may not
/// stand in: a fallback must be allowed for the role and, under a money budget, priced in
/// the hold's currency with room for some output at its price.
fn fits(
    i: usize,
    model: &CatalogueModel,
    price: Option<&Price>,
    asked_max: Option<u32>,
    policy: CallPolicy<'_>,
    input_estimate: u64,
) -> Option<u32> {
    let asked = asked_max.unwrap_or(model.max_output);
    let cap = asked.min(model.max_output);
    // The model asked for was checked when the step was reserved; a fallback is checked here.
    if i > 0 && !crate::catalogue::allows(policy.role_models, &model.name) {
        return None;
    }
    let Some(money) = policy.money else {
        return Some(cap);
    };
    // Under a money budget every model, the one asked for too (its price may have changed
    // since the reservation), must be priced in the hold's currency and fit the hold.
    let price = price.filter(|p| p.currency == money.currency)?;
    let room = price.output_affordable(money.amount, input_estimate);
    let cap = u32::try_from(room).unwrap_or(u32::MAX).min(cap);
    (cap > 0).then_some(cap)
}

/// A call that could not be made: it fails like an upstream error, after the turn's start
/// (if it goes with this call) is stored.
async fn fail_alone(
    error: LlmError,
    start: Option<PendingStart>,
    events: &EventSink,
) -> ModelOutcome {
    if let Some(start) = start {
        if let Err(e) = start.commit(events).await {
            return ModelOutcome::Unstored(e);
        }
    }
    ModelOutcome::Failed {
        text: String::new(),
        error,
        streamed: false,
    }
}
