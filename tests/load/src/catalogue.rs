//! The `catalogue` scenario: the server under test configured with a model catalogue of two
//! providers (`[[providers]]` of kind openai, one per fake upstream) and two priced models,
//! and plain turns alternating between them.
//!
//! The catalogue replaces the `[llm]` provider in the server (it cannot have both), so when
//! the scenario runs the catalogue also holds `fake` on a provider `default` pointing at the
//! first fake upstream, with the `[llm]` limits and no price: what the legacy `[llm]`
//! settings make of themselves (a one-entry catalogue). The other scenarios' conversations
//! name no model and get that default, so they run as before. The image scenario uses the
//! same catalogue (`fake`, plus its model that reads images; `crate::image`). Without
//! either (and in held, soak and search runs) the server gets the legacy `[llm]` settings
//! only.
//!
//! Per phase the kit reads both fake upstreams' counters by requested model id, so the
//! report shows that `fast-a` reached the first upstream as `fake-a` and `fast-b` the second
//! as `fake-b`; at the end it reads the usage ledger per model (calls, tokens charged to the
//! role's token budget, cost at the model's price).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::bench::Ctx;
use crate::sys;

/// `--scenarios` key.
pub const KEY: &str = "catalogue";
/// Report name.
pub const NAME: &str = "catalogue: two providers, two models (plain chat)";

/// The catalogue's models the scenario's conversations alternate between:
/// (public name, provider, upstream model id).
pub const MODELS: [(&str, &str, &str); 2] = [("fast-a", "a", "fake-a"), ("fast-b", "b", "fake-b")];

/// The default model (what the legacy `[llm]` settings name), on the `default` provider.
pub const DEFAULT_MODEL: &str = "fake";

/// `AGENTCHAT_PROVIDERS`: `default` and `a` on the first fake upstream, `b` on the second
/// (when it runs: `fake_b` is empty otherwise).
pub fn providers_env(fake_a: &str, fake_b: &str) -> String {
    let p = |name: &str, base: &str| json!({"name": name, "kind": "openai", "base_url": format!("{base}/v1"), "api_key": format!("load-kit-{name}")});
    let mut providers = vec![p("default", fake_a)];
    if !fake_b.is_empty() {
        providers.extend([p("a", fake_a), p("b", fake_b)]);
    }
    Value::Array(providers).to_string()
}

/// `AGENTCHAT_MODELS`: `fake` as the `[llm]` settings would make it (no limits of its own, no
/// price), then the two priced models, `fast-a` falling back to `fast-b`. No context window
/// or output cap of their own either: the `[llm]` ones, so a turn start reads as much
/// history as before (it reads up to the widest window in the catalogue).
///
/// With `catalogue` off only `fake` is there; with `images`, also the image scenario's model
/// ([`crate::image::model_entry`]).
pub fn models_env(catalogue: bool, images: bool) -> String {
    let [(a, pa, ua), (b, pb, ub)] = MODELS;
    let mut models = vec![json!({"name": DEFAULT_MODEL, "provider": "default"})];
    if catalogue {
        models.extend([
            json!({"name": a, "provider": pa, "upstream_model": ua,
             "prices": [{"currency": "USD", "input": "0.15", "output": "0.60", "cache_read": "0.075"}],
             "fallbacks": [b]}),
            json!({"name": b, "provider": pb, "upstream_model": ub,
             "prices": [{"currency": "USD", "input": "0.25", "output": "1.25"}]}),
        ]);
    }
    if images {
        models.push(crate::image::model_entry());
    }
    Value::Array(models).to_string()
}

/// The model of the `i`-th catalogue conversation (alternating).
pub fn model_of(i: usize) -> &'static str {
    MODELS[i % MODELS.len()].0
}

/// Model calls each fake upstream has served so far, by the model id they named, keyed
/// `upstream N: id` (N = 1 for the first fake upstream, 2 for the second).
pub async fn upstream_calls(ctx: &Ctx) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (n, base) in [&ctx.fake_base, &ctx.fake_b_base].into_iter().enumerate() {
        let Some(v) = stats(&ctx.direct_http, base).await else {
            continue;
        };
        if let Some(models) = v.get("models").and_then(Value::as_object) {
            for (m, c) in models {
                let shown = if m.is_empty() { "(none)" } else { m };
                out.insert(
                    format!("upstream {}: {shown}", n + 1),
                    c.as_u64().unwrap_or(0),
                );
            }
        }
    }
    out
}

async fn stats(http: &reqwest::Client, base: &str) -> Option<Value> {
    http.get(format!("{base}/control/stats"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()
}

/// `after − before`, keys with no calls left out.
pub fn calls_since(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// One model's rows in the usage ledger over the run (warm-up included).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelUsage {
    pub model: String,
    pub calls: u64,
    /// Tokens charged to the budget (the role's token budget).
    pub charged_tokens: i64,
    /// Cost at the model's price, exact decimal as Postgres prints it; rows without a cost
    /// (the model is unpriced) are `unpriced_calls`.
    pub cost: String,
    pub currency: String,
    pub unpriced_calls: u64,
}

/// What the run charged, read from the database before it is dropped.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CatalogueUsage {
    pub models: Vec<ModelUsage>,
    /// `role: token_budget (period), models` of every role.
    pub roles: Vec<String>,
    /// Reservations still held at the end (budget_periods.reserved, budget_holds rows).
    pub reserved_left: i64,
    pub holds_left: i64,
    pub error: Option<String>,
}

impl CatalogueUsage {
    pub fn of(&self, model: &str) -> Option<&ModelUsage> {
        self.models.iter().find(|m| m.model == model)
    }
}

/// Reads the usage ledger, the roles' budgets and what is still reserved.
pub fn usage(ctx: &Ctx) -> CatalogueUsage {
    match read_usage(ctx) {
        Ok(u) => u,
        Err(e) => CatalogueUsage {
            error: Some(format!("{e:#}")),
            ..Default::default()
        },
    }
}

fn read_usage(ctx: &Ctx) -> anyhow::Result<CatalogueUsage> {
    let q = |sql: &str| sys::psql_in(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db, sql);
    let mut u = CatalogueUsage::default();
    let rows = q("SELECT model, count(*), coalesce(sum(charged), 0), \
                coalesce(sum(cost), 0)::text, coalesce(min(currency), ''), \
                count(*) FILTER (WHERE cost IS NULL) \
         FROM usage_records GROUP BY model ORDER BY model")?;
    for line in rows.lines().filter(|l| !l.trim().is_empty()) {
        let v: Vec<&str> = line.split('|').collect();
        anyhow::ensure!(v.len() == 6, "unexpected usage row {line}");
        u.models.push(ModelUsage {
            model: v[0].to_owned(),
            calls: v[1].parse()?,
            charged_tokens: v[2].parse()?,
            cost: v[3].to_owned(),
            currency: v[4].to_owned(),
            unpriced_calls: v[5].parse()?,
        });
    }
    let roles = q(
        "SELECT name || ': ' || coalesce(token_budget::text, 'unlimited') || ' tokens per ' \
                || budget_period || ', models ' || array_to_string(models, ',') \
         FROM roles ORDER BY name",
    )?;
    u.roles = roles.lines().map(str::to_owned).collect();
    let left = q(
        "SELECT coalesce(sum(reserved), 0), (SELECT count(*) FROM budget_holds) \
         FROM budget_periods",
    )?;
    let v: Vec<&str> = left.split('|').collect();
    anyhow::ensure!(v.len() == 2, "unexpected answer {left}");
    u.reserved_left = v[0].parse()?;
    u.holds_left = v[1].parse()?;
    Ok(u)
}
