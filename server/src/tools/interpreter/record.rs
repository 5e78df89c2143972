//! What one call leaves behind: its `sandbox_runs` row, its outcome label and the
//! attributes of its `execute_tool` span.

use std::time::Duration;

use rust_decimal::Decimal;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::files::{sha256_hex, Hashed, Saved};
use super::result::millis;
use crate::db::models::sandbox_run::{self, NewSandboxRun};
use crate::sandbox::{LimitHit, RunResult, SandboxError};
use crate::tools::{ToolContext, ToolError};

/// The audit facts of one call, filled in as it goes.
pub struct Run {
    row: NewSandboxRun,
    inputs: Vec<Hashed>,
    pub queue_wait: Duration,
    pub cost: Option<(Decimal, String)>,
}

impl Run {
    pub fn new(ctx: &ToolContext, code: &str, isolation: &str) -> Self {
        Self {
            row: NewSandboxRun {
                user_id: ctx.user_id,
                username: ctx.username.clone(),
                conversation_id: ctx.conversation_id,
                code: code.to_owned(),
                code_sha256: sha256_hex(code.as_bytes()),
                inputs: Value::Array(Vec::new()),
                outputs: Value::Array(Vec::new()),
                skipped: Value::Array(Vec::new()),
                outcome: "error".into(),
                error: None,
                exit_code: None,
                timed_out: false,
                limit_hit: None,
                duration_ms: 0,
                cpu_ms: 0,
                max_rss_bytes: 0,
                queue_wait_ms: 0,
                isolation: isolation.to_owned(),
                cost: None,
                currency: None,
            },
            inputs: Vec::new(),
            queue_wait: Duration::ZERO,
            cost: None,
        }
    }

    pub fn outcome(&self) -> &str {
        &self.row.outcome
    }

    pub fn inputs(&mut self, inputs: Vec<Hashed>) {
        self.row.inputs = serde_json::to_value(&inputs).unwrap_or_default();
        self.inputs = inputs;
    }

    pub fn busy(&mut self) {
        self.row.outcome = "busy".into();
    }

    pub fn denied(&mut self) {
        self.row.outcome = "denied".into();
    }

    pub fn backend_failed(&mut self, e: &SandboxError) {
        self.row.outcome = match e {
            SandboxError::Unavailable(_) => "denied",
            SandboxError::Start(_) => "error",
        }
        .into();
    }

    /// A call that ended in a tool error keeps its message (and `denied` for a refusal).
    pub fn failed(&mut self, e: &ToolError) {
        if matches!(e, ToolError::NotPermitted(_)) {
            self.row.outcome = "denied".into();
        }
        self.row.error = Some(e.to_string());
    }

    pub fn ended(&mut self, r: &RunResult, saved: &Saved, skipped: &[String]) {
        self.row.outcome = outcome_of(r).into();
        self.row.exit_code = r.exit;
        self.row.timed_out = r.timed_out;
        self.row.limit_hit = r.limit_hit.map(|l| limit_name(l).to_owned());
        self.row.duration_ms = to_i64(millis(r.duration));
        self.row.cpu_ms = to_i64(millis(r.cpu));
        self.row.max_rss_bytes = to_i64(r.max_rss_bytes);
        self.row.outputs = serde_json::to_value(&saved.hashed).unwrap_or_default();
        let mut all: Vec<&String> = skipped.iter().collect();
        all.extend(saved.skipped.iter());
        self.row.skipped = serde_json::to_value(all).unwrap_or_default();
    }

    /// Sandbox attributes on the current (`execute_tool`) span; the code only with content
    /// capture on.
    pub fn annotate_span(&self, capture_content: bool) {
        let span = tracing::Span::current();
        let r = &self.row;
        span.set_attribute("sandbox.outcome", r.outcome.clone());
        span.set_attribute("sandbox.isolation", r.isolation.clone());
        span.set_attribute("sandbox.code.sha256", r.code_sha256.clone());
        span.set_attribute("sandbox.exit_code", i64::from(r.exit_code.unwrap_or(-1)));
        span.set_attribute("sandbox.timed_out", r.timed_out);
        if let Some(l) = &r.limit_hit {
            span.set_attribute("sandbox.limit_hit", l.clone());
        }
        span.set_attribute("sandbox.cpu_ms", r.cpu_ms);
        span.set_attribute("sandbox.max_rss_bytes", r.max_rss_bytes);
        span.set_attribute("sandbox.duration_ms", r.duration_ms);
        span.set_attribute("sandbox.queue_wait_ms", to_i64(millis(self.queue_wait)));
        span.set_attribute("sandbox.inputs", to_i64(self.inputs.len() as u64));
        if capture_content {
            span.set_attribute("sandbox.code", r.code.clone());
        }
    }

    /// Writes the row (a failure is logged: the call's own audit row still exists).
    pub async fn store(mut self, pool: &crate::db::Pool) {
        self.row.queue_wait_ms = to_i64(millis(self.queue_wait));
        if let Some((cost, currency)) = self.cost.take() {
            self.row.cost = Some(cost);
            self.row.currency = Some(currency);
        }
        let stored = match pool.get().await {
            Ok(mut conn) => sandbox_run::insert(&mut conn, &self.row)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = stored {
            tracing::error!(error = %e, "a sandbox run's audit row could not be written");
        }
    }
}

use serde_json::Value;

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub fn limit_name(l: LimitHit) -> &'static str {
    match l {
        LimitHit::Memory => "memory",
        LimitHit::Cpu => "cpu",
        LimitHit::Processes => "processes",
        LimitHit::Output => "output",
        LimitHit::Files => "files",
    }
}

/// The `outcome` label of a run that happened.
fn outcome_of(r: &RunResult) -> &'static str {
    match r.limit_hit {
        _ if r.timed_out => "timeout",
        Some(LimitHit::Cpu) => "timeout",
        Some(LimitHit::Memory) => "memory",
        Some(LimitHit::Processes) => "processes",
        Some(LimitHit::Output | LimitHit::Files) => "output",
        None if r.exit == Some(0) => "ok",
        None => "error",
    }
}
