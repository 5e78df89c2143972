//! Prometheus metrics: one registry per application (tests run several side by side), the
//! handles the code updates, and the text exposition for `GET /metrics`. Labels stay
//! low-cardinality: route patterns, models, tools, outcomes — never a user id.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Latency buckets (seconds) from 1 ms to 5 min.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// Every metric the server exports.
pub struct Metrics {
    registry: Registry,
    /// The code interpreter's runs (DESIGN §15).
    pub sandbox: crate::sandbox::metrics::SandboxMetrics,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
    pub chat_turns: IntCounterVec,
    pub turn_duration: Histogram,
    pub model_calls: IntCounterVec,
    pub model_duration: HistogramVec,
    pub model_ttft: HistogramVec,
    /// `type`: `input` (every prompt token), `output`, and of the input `cache_read` and
    /// `cache_write` (the cache-hit ratio is cache_read / input).
    pub tokens: IntCounterVec,
    /// What model calls cost at their model's price, by model and currency.
    pub model_cost: prometheus::CounterVec,
    pub tool_calls: IntCounterVec,
    pub tool_duration: HistogramVec,
    pub budget_refusals: IntCounter,
    /// Transactions Postgres gave up to a concurrent one (deadlock, serialization failure),
    /// by transaction ([`crate::db::conflict::Transaction`]); each was retried or answered 503.
    pub db_conflicts: IntCounterVec,
    /// Title calls by outcome ([`crate::turn::title::Outcome`]).
    pub titles: IntCounterVec,
    pub budget_overrun_tokens: IntCounterVec,
    pub active_streams: IntGauge,
    pub upstream_retries: IntCounterVec,
    /// Per pool shard (one per worker thread, [`crate::shard`]) and state.
    pub db_pool: IntGaugeVec,
    pub db_pool_max: IntGaugeVec,
    pub db_pool_waiting: IntGaugeVec,
    pub turn_starts_waiting: IntGauge,
    pub db_up: IntGauge,
    /// Tool calls waiting for a decision, by who must decide (`user`, `admin`).
    pub approvals_waiting: IntGaugeVec,
    /// Age of the oldest waiting call, by who must decide.
    pub approval_oldest_seconds: prometheus::GaugeVec,
    pub approvals_requested: IntCounterVec,
    /// Decisions by outcome (`approved`, `denied`, `expired`).
    pub approval_decisions: IntCounterVec,
    /// 1 for each MCP server's current state (`connected`, `degraded`, …), 0 for the others.
    pub mcp_server_state: IntGaugeVec,
    /// Tools each MCP server offers models now (within the listing limits).
    pub mcp_tools_offered: IntGaugeVec,
    /// 1 for each provider breaker's current state (`closed`, `open`, `half_open`), 0 for the
    /// others; set at each scrape.
    pub provider_breaker_state: IntGaugeVec,
    /// 1 for the code interpreter's isolation level here (ok, rlimits_only, unavailable).
    pub sandbox_isolation: IntGaugeVec,
    /// Model calls a fallback answered, by the model asked, the one that answered and why.
    pub model_fallbacks: IntCounterVec,
    /// Ingestion jobs ended, by outcome (`ready`, `failed`).
    pub knowledge_jobs: IntCounterVec,
    /// Chunks embedded and stored.
    pub knowledge_chunks: IntCounter,
    /// Tokens sent to the embedding model (ingestion and queries).
    pub knowledge_embedding_tokens: IntCounter,
    /// One embeddings request.
    pub knowledge_embed_seconds: Histogram,
    /// One `search_knowledge` query (embedding it and the hybrid search).
    pub knowledge_search_seconds: Histogram,
}

fn gauge(r: &Registry, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntGaugeVec> {
    let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

fn counter(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<HistogramVec> {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()),
        labels,
    )?;
    r.register(Box::new(h.clone()))?;
    Ok(h)
}

fn plain_counter(r: &Registry, name: &str, help: &str) -> prometheus::Result<IntCounter> {
    let c = IntCounter::new(name, help)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn plain_histogram(r: &Registry, name: &str, help: &str) -> prometheus::Result<Histogram> {
    let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()))?;
    r.register(Box::new(h.clone()))?;
    Ok(h)
}

impl Metrics {
    pub fn new() -> prometheus::Result<Self> {
        let r = Registry::new();
        let turn_duration = Histogram::with_opts(
            HistogramOpts::new("agentchat_turn_duration_seconds", "Duration of chat turns")
                .buckets(LATENCY_BUCKETS.to_vec()),
        )?;
        r.register(Box::new(turn_duration.clone()))?;
        let budget_refusals = IntCounter::new(
            "agentchat_budget_refusals_total",
            "Chat requests refused because the budget could not cover them",
        )?;
        r.register(Box::new(budget_refusals.clone()))?;
        let active_streams = IntGauge::new("agentchat_active_streams", "Open SSE streams")?;
        r.register(Box::new(active_streams.clone()))?;
        let db_pool = gauge(
            &r,
            "agentchat_db_pool_connections",
            "Database pool connections by shard and state (in_use, idle)",
            &["shard", "state"],
        )?;
        let db_pool_max = gauge(
            &r,
            "agentchat_db_pool_max_connections",
            "Most connections a database pool shard may open",
            &["shard"],
        )?;
        let db_pool_waiting = gauge(
            &r,
            "agentchat_db_pool_waiting",
            "Requests waiting for a connection from a database pool shard",
            &["shard"],
        )?;
        let db_up = IntGauge::new("agentchat_db_up", "1 when the database answers")?;
        r.register(Box::new(db_up.clone()))?;
        let turn_starts_waiting = IntGauge::new(
            "agentchat_turn_starts_waiting",
            "Turn starts queued for a database connection (a burst)",
        )?;
        r.register(Box::new(turn_starts_waiting.clone()))?;
        let approval_oldest_seconds = prometheus::GaugeVec::new(
            Opts::new(
                "agentchat_approval_oldest_waiting_seconds",
                "Age of the oldest tool call waiting for a decision, by approver",
            ),
            &["approver"],
        )?;
        r.register(Box::new(approval_oldest_seconds.clone()))?;
        let m = Self {
            mcp_server_state: gauge(
                &r,
                "agentchat_mcp_server_state",
                "1 for each MCP server's current state (connecting, connected, degraded, error, disabled)",
                &["server", "state"],
            )?,
            sandbox_isolation: gauge(
                &r,
                "agentchat_sandbox_isolation",
                "1 for the code interpreter's isolation level on this replica (ok, rlimits_only, unavailable)",
                &["level"],
            )?,
            provider_breaker_state: gauge(
                &r,
                "agentchat_provider_breaker_state",
                "1 for each provider circuit breaker's current state (closed, open, half_open)",
                &["provider", "state"],
            )?,
            model_fallbacks: counter(
                &r,
                "agentchat_model_fallbacks_total",
                "Model calls moved to a fallback model before their first token, by reason",
                &["model", "fallback", "reason"],
            )?,
            mcp_tools_offered: gauge(
                &r,
                "agentchat_mcp_tools_offered",
                "Tools an MCP server offers models now, within the listing limits",
                &["server"],
            )?,
            approvals_waiting: gauge(
                &r,
                "agentchat_approvals_waiting",
                "Tool calls waiting for a decision, by approver (user, admin)",
                &["approver"],
            )?,
            approval_oldest_seconds,
            approvals_requested: counter(
                &r,
                "agentchat_approvals_requested_total",
                "Tool calls paused for a decision, by approver",
                &["approver"],
            )?,
            approval_decisions: counter(
                &r,
                "agentchat_approval_decisions_total",
                "Decisions on paused tool calls (approved, denied, expired)",
                &["decision"],
            )?,
            http_requests: counter(
                &r,
                "agentchat_http_requests_total",
                "HTTP requests",
                &["route", "method", "status"],
            )?,
            http_duration: histogram(
                &r,
                "agentchat_http_request_duration_seconds",
                "HTTP request latency (to the response head)",
                &["route", "method"],
            )?,
            chat_turns: counter(
                &r,
                "agentchat_chat_turns_total",
                "Chat turns by finish reason",
                &["finish_reason"],
            )?,
            turn_duration,
            model_calls: counter(
                &r,
                "agentchat_model_calls_total",
                "Model calls",
                &["provider", "model", "outcome"],
            )?,
            model_duration: histogram(
                &r,
                "agentchat_model_call_duration_seconds",
                "Model call duration",
                &["provider", "model"],
            )?,
            model_ttft: histogram(
                &r,
                "agentchat_model_time_to_first_token_seconds",
                "Time from request to the first streamed token",
                &["provider", "model"],
            )?,
            tokens: counter(
                &r,
                "agentchat_tokens_total",
                "Tokens by model and type",
                &["model", "type"],
            )?,
            model_cost: {
                let c = prometheus::CounterVec::new(
                    Opts::new(
                        "agentchat_model_cost_total",
                        "Cost of model calls at the model's price",
                    ),
                    &["model", "currency"],
                )?;
                r.register(Box::new(c.clone()))?;
                c
            },
            tool_calls: counter(
                &r,
                "agentchat_tool_calls_total",
                "Tool calls by outcome",
                &["tool", "outcome"],
            )?,
            tool_duration: histogram(
                &r,
                "agentchat_tool_call_duration_seconds",
                "Tool call duration",
                &["tool"],
            )?,
            budget_refusals,
            db_conflicts: counter(
                &r,
                "agentchat_db_conflicts_total",
                "Transactions lost to a deadlock or serialization failure, by transaction",
                &["transaction"],
            )?,
            titles: counter(
                &r,
                "agentchat_titles_total",
                "Conversation title calls by outcome",
                &["outcome"],
            )?,
            budget_overrun_tokens: counter(
                &r,
                "agentchat_budget_overrun_tokens_total",
                "Tokens a provider reported beyond the reservation",
                &["model"],
            )?,
            active_streams,
            upstream_retries: counter(
                &r,
                "agentchat_upstream_retries_total",
                "Retried upstream requests",
                &["provider"],
            )?,
            db_pool,
            db_pool_max,
            db_pool_waiting,
            turn_starts_waiting,
            db_up,
            knowledge_jobs: counter(
                &r,
                "agentchat_knowledge_jobs_total",
                "Knowledge ingestion jobs ended, by outcome",
                &["outcome"],
            )?,
            knowledge_chunks: plain_counter(
                &r,
                "agentchat_knowledge_chunks_total",
                "Knowledge chunks embedded and stored",
            )?,
            knowledge_embedding_tokens: plain_counter(
                &r,
                "agentchat_knowledge_embedding_tokens_total",
                "Tokens sent to the embedding model",
            )?,
            knowledge_embed_seconds: plain_histogram(
                &r,
                "agentchat_knowledge_embed_duration_seconds",
                "Duration of one embeddings request",
            )?,
            knowledge_search_seconds: plain_histogram(
                &r,
                "agentchat_knowledge_search_duration_seconds",
                "Duration of one search_knowledge query",
            )?,
            sandbox: crate::sandbox::metrics::SandboxMetrics::register(&r)?,
            registry: r,
        };
        for outcome in ["ready", "failed"] {
            m.knowledge_jobs.with_label_values(&[outcome]);
        }
        // Pre-create the series dashboards and alerts divide by, so the first event shows.
        for reason in [
            "stop",
            "max_iterations",
            "budget_exhausted",
            "tool_failures",
            "cancelled",
            "error",
        ] {
            m.chat_turns.with_label_values(&[reason]);
        }
        Ok(m)
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let families = self.registry.gather();
        if TextEncoder::new().encode(&families, &mut out).is_err() {
            return String::new();
        }
        String::from_utf8(out).unwrap_or_default()
    }
}
