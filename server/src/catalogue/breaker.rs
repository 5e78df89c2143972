//! Circuit breakers, one per provider endpoint: after enough failures a provider is skipped
//! (its models' calls go straight to their fallbacks) until a cool-down passes; then one
//! probe call decides whether it closes again. Checks are in memory; opening and closing
//! are shared with the other processes through Postgres ([`super::breaker_sync`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use uuid::Uuid;

use crate::llm::LlmError;

pub use crate::config::BreakerSettings;

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls are refused until the cool-down passes.
    Open,
    /// The cool-down passed: one probe call is let through.
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }

    pub const ALL: [Self; 3] = [Self::Closed, Self::Open, Self::HalfOpen];
}

/// What a breaker says to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Pass,
    /// Go ahead as the half-open probe: this call's outcome opens or closes the breaker.
    Probe,
    /// Skip this provider.
    Refused,
}

/// A change another process should hear of.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    Opened {
        until: DateTime<Utc>,
        reason: String,
        /// When it happened (a later change elsewhere wins over it).
        at: DateTime<Utc>,
    },
    Closed {
        at: DateTime<Utc>,
    },
}

/// A breaker as the admin view and `/readyz` show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BreakerView {
    pub state: BreakerState,
    pub consecutive_failures: u32,
    /// While open: when a probe may try again.
    pub open_until: Option<DateTime<Utc>>,
    /// Why it last opened (the provider's error code and message, cut short).
    pub last_error: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    consecutive: u32,
    /// The distinct callers of the current run of failures (a handful: the run opens it
    /// once `min_users` of them failed).
    run_callers: Vec<Uuid>,
    /// Outcomes in the window: (when, the caller whose call failed; `None`: it succeeded).
    recent: VecDeque<(Instant, Option<Uuid>)>,
    /// Open until then (monotonic and wall-clock).
    open_until: Option<(Instant, DateTime<Utc>)>,
    /// Since when the half-open probe has been out (one at a time; a probe whose task died
    /// without an outcome stops counting after [`PROBE_TIMEOUT`]).
    probing: Option<Instant>,
    last_error: Option<String>,
    /// The latest opening or closing, here or taken from another process.
    changed_at: Option<DateTime<Utc>>,
}

/// How long a probe may be out before another call may probe instead.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// One provider endpoint's breaker.
#[derive(Debug)]
pub struct Breaker {
    settings: BreakerSettings,
    inner: Mutex<Inner>,
}

impl Breaker {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn state_of(inner: &Inner, now: Instant) -> BreakerState {
        match inner.open_until {
            Some((until, _)) if now < until => BreakerState::Open,
            Some(_) => BreakerState::HalfOpen,
            None => BreakerState::Closed,
        }
    }

    pub fn state(&self) -> BreakerState {
        self.inner
            .lock()
            .map(|i| Self::state_of(&i, Instant::now()))
            .unwrap_or(BreakerState::Closed)
    }

    /// Whether a call may go to this provider now.
    pub fn admit(&self) -> Admission {
        let Ok(mut inner) = self.inner.lock() else {
            return Admission::Pass;
        };
        match Self::state_of(&inner, Instant::now()) {
            BreakerState::Closed => Admission::Pass,
            BreakerState::Open => Admission::Refused,
            BreakerState::HalfOpen
                if inner
                    .probing
                    .is_some_and(|since| since.elapsed() < PROBE_TIMEOUT) =>
            {
                Admission::Refused
            }
            BreakerState::HalfOpen => {
                inner.probing = Some(Instant::now());
                Admission::Probe
            }
        }
    }

    /// A probe that ended without an outcome (cancelled): the next call may probe.
    pub fn abandon_probe(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.probing = None;
        }
    }

    /// Records a call that got its first token (or a complete answer). Only the probe
    /// closes an open breaker: a call let through before it opened says nothing of now.
    pub fn succeeded(&self, admission: Admission) -> Option<Transition> {
        let mut inner = self.inner.lock().ok()?;
        let now = Instant::now();
        self.push(&mut inner, now, None);
        inner.consecutive = 0;
        inner.run_callers.clear();
        if inner.open_until.is_none() || admission != Admission::Probe {
            return None;
        }
        inner.probing = None;
        inner.open_until = None;
        let at = Utc::now();
        inner.changed_at = Some(at);
        Some(Transition::Closed { at })
    }

    /// Records a call of `caller` that failed before its first token with an error that
    /// says the endpoint is unwell ([`counts_against`]). Failures open the breaker only
    /// once they come from `min_users` distinct callers: a timeout or a 429 one member's
    /// prompts caused must not shut the provider for everyone (a failed probe reopens it
    /// whoever made it).
    pub fn failed(
        &self,
        error: &LlmError,
        admission: Admission,
        caller: Uuid,
    ) -> Option<Transition> {
        let mut inner = self.inner.lock().ok()?;
        let now = Instant::now();
        inner.consecutive = inner.consecutive.saturating_add(1);
        if !inner.run_callers.contains(&caller) && inner.run_callers.len() < 1_000 {
            inner.run_callers.push(caller);
        }
        self.push(&mut inner, now, Some(caller));
        let reason = crate::llm::truncate_chars(&format!("{}: {error}", error.code()), 200);
        inner.last_error = Some(reason.clone());
        let probe_failed = admission == Admission::Probe;
        if probe_failed {
            inner.probing = None;
        }
        let (total, failed) = inner.recent.iter().fold((0u32, 0u32), |(t, f), (_, bad)| {
            (t + 1, f + u32::from(bad.is_some()))
        });
        let min_users = usize::try_from(self.settings.min_users.max(1)).unwrap_or(usize::MAX);
        let mut failing: Vec<Uuid> = inner.recent.iter().filter_map(|(_, c)| *c).collect();
        failing.sort_unstable();
        failing.dedup();
        let rate_tripped = total >= self.settings.min_calls.max(1)
            && f64::from(failed) / f64::from(total) >= self.settings.failure_rate
            && failing.len() >= min_users;
        let run_tripped =
            inner.consecutive >= self.settings.failures && inner.run_callers.len() >= min_users;
        let already_open = Self::state_of(&inner, now) == BreakerState::Open;
        if already_open || !(probe_failed || run_tripped || rate_tripped) {
            return None;
        }
        let until =
            Utc::now() + chrono::Duration::from_std(self.settings.cooldown).unwrap_or_default();
        inner.open_until = Some((now + self.settings.cooldown, until));
        let at = Utc::now();
        inner.changed_at = Some(at);
        Some(Transition::Opened { until, reason, at })
    }

    fn push(&self, inner: &mut Inner, now: Instant, failed: Option<Uuid>) {
        inner.recent.push_back((now, failed));
        while inner
            .recent
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > self.settings.window)
        {
            inner.recent.pop_front();
        }
        // Bounded whatever the traffic: the rate needs no more than this.
        while inner.recent.len() > 1_000 {
            inner.recent.pop_front();
        }
    }

    /// Takes another process's word, written at `changed_at`: open until `open_until`, or
    /// closed. A word older than this breaker's latest change is stale and ignored.
    pub fn adopt(
        &self,
        open_until: Option<DateTime<Utc>>,
        reason: Option<String>,
        changed_at: DateTime<Utc>,
    ) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.changed_at.is_some_and(|mine| mine >= changed_at) {
            return;
        }
        inner.changed_at = Some(changed_at);
        match open_until.map(|u| (u, (u - Utc::now()).to_std())) {
            Some((wall, Ok(left))) => {
                inner.open_until = Some((Instant::now() + left, wall));
                inner.last_error = reason.or(inner.last_error.take());
            }
            // Open until a time already past: half-open, as it would be here.
            Some((wall, Err(_))) => {
                inner.open_until = Some((Instant::now(), wall));
                inner.last_error = reason.or(inner.last_error.take());
            }
            None => {
                inner.open_until = None;
                inner.consecutive = 0;
                inner.run_callers.clear();
                inner.probing = None;
            }
        }
    }

    pub fn view(&self) -> BreakerView {
        let Ok(inner) = self.inner.lock() else {
            return BreakerView {
                state: BreakerState::Closed,
                consecutive_failures: 0,
                open_until: None,
                last_error: None,
            };
        };
        let state = Self::state_of(&inner, Instant::now());
        BreakerView {
            state,
            consecutive_failures: inner.consecutive,
            open_until: (state == BreakerState::Open)
                .then(|| inner.open_until.map(|(_, wall)| wall))
                .flatten(),
            last_error: inner.last_error.clone(),
        }
    }
}

/// Whether `error` says the endpoint is unwell (counts towards opening its breaker): not a
/// request the provider refused on its merits (400, 401, 404, ...).
pub fn counts_against(error: &LlmError) -> bool {
    match error {
        LlmError::Upstream { status, .. } => *status == 408 || *status >= 500,
        LlmError::Config(_) | LlmError::CircuitOpen(_) => false,
        _ => true,
    }
}

/// Every provider endpoint's breaker, by provider name. Providers come and go with the
/// catalogue; a provider that stays keeps its breaker (and what it has seen).
#[derive(Debug)]
pub struct Breakers {
    settings: BreakerSettings,
    by_provider: RwLock<HashMap<String, Arc<Breaker>>>,
}

impl Breakers {
    pub fn new<'a>(
        providers: impl IntoIterator<Item = &'a str>,
        settings: BreakerSettings,
    ) -> Self {
        let b = Self {
            settings,
            by_provider: RwLock::default(),
        };
        b.keep_only(providers);
        b
    }

    pub fn get(&self, provider: &str) -> Option<Arc<Breaker>> {
        self.by_provider.read().ok()?.get(provider).cloned()
    }

    /// Every breaker, by provider name, sorted.
    pub fn all(&self) -> Vec<(String, Arc<Breaker>)> {
        let mut all: Vec<_> = self
            .by_provider
            .read()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Breakers for exactly these providers: new ones start closed, removed ones go.
    pub fn keep_only<'a>(&self, providers: impl IntoIterator<Item = &'a str>) {
        let Ok(mut map) = self.by_provider.write() else {
            return;
        };
        let names: Vec<&str> = providers.into_iter().collect();
        map.retain(|k, _| names.contains(&k.as_str()));
        for name in names {
            map.entry(name.to_owned())
                .or_insert_with(|| Arc::new(Breaker::new(self.settings)));
        }
    }
}

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;
