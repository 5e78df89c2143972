//! `run_python`, the code interpreter (DESIGN §15): the model writes Python, a jail runs it
//! (a [`Backend`], bubblewrap on this machine; the tool never learns which), on the user's
//! workspace files, and the files it writes come back to the workspace. Governed like every
//! tool (role allowlist, approvals, audit row through the registry) and then some: a kill
//! switch, a bound on runs per user and per replica, the CPU paid from the money budget, and
//! a row of its own per run with the whole code and the hash of every file.

pub mod charge;
pub mod files;
pub mod gate;
pub mod role_limits;

mod record;
mod result;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use self::charge::CpuPrice;
use self::gate::{Busy, RunGate};
use self::record::Run;
use crate::config::SandboxSettings;
use crate::files::WorkspaceStore;
use crate::sandbox::metrics::SandboxMetrics;
use crate::sandbox::{Backend, Isolation, Job, JobLimits};
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// The tool's name (roles list it).
pub const NAME: &str = "run_python";

/// Arguments of `run_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPythonArgs {
    /// The Python 3 program to run, complete (imports included).
    #[schemars(length(min = 1, max = 100000))]
    pub code: String,
    /// Workspace paths of files the code reads; each is readable at /mnt/data/<path>.
    #[serde(default)]
    #[schemars(length(max = 20))]
    pub inputs: Vec<String>,
    /// Wall-time limit in seconds (default and maximum set by the admin).
    #[serde(default)]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_secs: Option<u64>,
}

/// How long a run waits in line for a slot before the tool answers busy.
pub const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// What the tool is allowed to do, from `[sandbox]`.
#[derive(Debug, Clone)]
pub struct InterpreterConfig {
    /// The jail's limits, the kill switch (`enabled`), the bounds on runs at once, the price.
    pub sandbox: SandboxSettings,
    /// How long a run waits in line for a slot before the tool answers busy.
    pub queue_wait: Duration,
    /// Put the code on the `execute_tool` span (content capture).
    pub capture_content: bool,
    /// This process, for the money holds it takes.
    pub process_id: uuid::Uuid,
}

impl InterpreterConfig {
    /// `None`: runs are free (the money budget is not touched).
    fn price(&self) -> Option<CpuPrice> {
        (self.sandbox.price_per_cpu_hour > rust_decimal::Decimal::ZERO).then(|| CpuPrice {
            per_hour: self.sandbox.price_per_cpu_hour,
            currency: self.sandbox.currency.clone(),
        })
    }
}

/// The `run_python` tool.
pub struct RunPython {
    backend: Arc<dyn Backend>,
    store: Arc<WorkspaceStore>,
    pool: crate::db::Pool,
    metrics: SandboxMetrics,
    config: InterpreterConfig,
    gate: RunGate,
}

impl RunPython {
    pub fn shared(
        backend: Arc<dyn Backend>,
        store: Arc<WorkspaceStore>,
        pool: crate::db::Pool,
        metrics: SandboxMetrics,
        config: InterpreterConfig,
    ) -> Arc<Self> {
        let gate = RunGate::new(
            config.sandbox.max_concurrent as usize,
            config.sandbox.max_concurrent_per_user as usize,
        );
        Arc::new(Self {
            backend,
            store,
            pool,
            metrics,
            config,
            gate,
        })
    }

    /// The limits of this call: `[sandbox]`, tightened by the caller's role (read now, so an
    /// admin's change holds from the next call) and by a shorter wall time if the call asks.
    async fn limits(
        &self,
        ctx: &ToolContext,
        timeout_secs: Option<u64>,
    ) -> Result<JobLimits, ToolError> {
        let mut limits = JobLimits::from_settings(&self.config.sandbox, timeout_secs);
        let role = async {
            let mut conn = crate::db::conn(&self.pool)
                .await
                .map_err(|e| e.to_string())?;
            role_limits::for_user(&mut conn, ctx.user_id)
                .await
                .map_err(|e| e.to_string())
        }
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "run_python: reading the role's limits");
            ToolError::Failed(
                "the server could not read this role's sandbox limits; try again".into(),
            )
        })?;
        role.tighten(&mut limits);
        Ok(limits)
    }

    /// Why no call may run now, if so (the kill switch, or no jail on this host).
    fn refusal(&self) -> Option<String> {
        if !self.config.sandbox.enabled {
            return Some("the code interpreter is switched off on this server".into());
        }
        match self.backend.isolation() {
            Isolation::Unavailable(reason) => Some(format!(
                "the code interpreter is unavailable on this server: {reason}"
            )),
            Isolation::Ok | Isolation::RlimitsOnly => None,
        }
    }
}

#[async_trait]
impl Tool for RunPython {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Run a Python 3 program in a sandbox (numpy, pandas and matplotlib available; no \
         network). Each call is a fresh process: variables, imports and state do NOT persist \
         between calls; files do. The files named in `inputs` (workspace paths) are readable \
         at /mnt/data/<path> (a file under outputs/ at /mnt/data/previous/<rest of its \
         path>). Write results (CSV, charts as PNG, reports) under \
         /mnt/data/outputs/: they are saved to the user's workspace under \
         outputs/<conversation>/ and shown to the user; plt.show() saves the figure there. \
         The result gives exit status, stdout, stderr, time, memory and the saved files."
    }

    fn parameters(&self) -> Value {
        args_schema::<RunPythonArgs>()
    }

    /// The jail's wall time, the wait in line, and time to save the outputs.
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.config.sandbox.timeout_secs)
            + self.config.queue_wait
            + Duration::from_secs(30)
    }

    fn output_cap_bytes(&self) -> Option<usize> {
        Some(result::OUTPUT_CAP_BYTES)
    }

    /// It reads and writes the user's files: an API key needs the `files` scope.
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: RunPythonArgs = parse_args(args)?;
        let mut run = Run::new(ctx, &args.code, self.backend.isolation().level());
        let ended = self.run(ctx, args, &mut run).await;
        if let Err(e) = &ended {
            run.failed(e);
        }
        self.metrics.runs.with_label_values(&[run.outcome()]).inc();
        run.annotate_span(self.config.capture_content);
        run.store(&self.pool).await;
        ended
    }
}

impl RunPython {
    /// Everything after the arguments parsed; `run` collects what the audit row keeps.
    async fn run(
        &self,
        ctx: &ToolContext,
        args: RunPythonArgs,
        run: &mut Run,
    ) -> Result<Value, ToolError> {
        if let Some(reason) = self.refusal() {
            tracing::warn!(reason, "run_python refused");
            return Err(ToolError::NotPermitted(reason));
        }
        let limits = self.limits(ctx, args.timeout_secs).await?;
        let (inputs, hashed) =
            files::load_inputs(&self.store, ctx.user_id, &args.inputs, limits.data_bytes).await?;
        run.inputs(hashed.clone());
        let (_permit, waited) = self
            .gate
            .admit(ctx.user_id, self.config.queue_wait)
            .await
            .map_err(|busy| {
                run.busy();
                ToolError::Failed(match busy {
                    Busy::User => format!(
                        "busy: {} of your code runs are still going; try again when one ends",
                        self.config.sandbox.max_concurrent_per_user
                    ),
                    Busy::Replica => {
                        "busy: the server runs as much code as it may right now; try again \
                         in a minute"
                            .to_owned()
                    }
                })
            })?;
        run.queue_wait = waited;
        self.metrics.queue_wait.observe(waited.as_secs_f64());
        let price = self.config.price();
        let held = match &price {
            Some(price) => Some((
                price,
                charge::hold(
                    &self.pool,
                    price,
                    ctx.user_id,
                    limits.cpu,
                    self.config.process_id,
                    self.timeout() + Duration::from_secs(60),
                )
                .await
                .inspect_err(|_| run.denied())?,
            )),
            None => None,
        };
        let started = Instant::now();
        let job = Job {
            code: args.code,
            inputs,
            limits,
        };
        let ran = self.backend.run(job).await;
        if let Some((price, held)) = &held {
            let cpu = ran.as_ref().map_or(Duration::ZERO, |r| r.cpu);
            let cost = price.cost(cpu);
            let charged = held.hold.as_ref().map_or(cost, |h| cost.min(h.amount));
            charge::settle(&self.pool, held, cost).await;
            run.cost = Some((charged, price.currency.clone()));
        }
        let ended = ran.map_err(|e| {
            run.backend_failed(&e);
            ToolError::Failed(e.to_string())
        })?;
        self.metrics
            .duration
            .observe(started.elapsed().as_secs_f64());
        self.metrics.max_rss.observe(ended.max_rss_bytes as f64);
        let skipped = ended.skipped.clone();
        let outputs = ended.outputs.clone();
        let saved =
            files::save_outputs(&self.store, ctx.user_id, ctx.conversation_id, outputs).await;
        run.ended(&ended, &saved, &skipped);
        Ok(result::envelope(&ended, &saved, &skipped))
    }
}
