//! Seeding: users (the first one admin), role budgets, personal API keys, the pool of
//! conversations, optional long histories, and the checkpoint before measuring.

use std::sync::Arc;

use anyhow::Context;
use tokio::time::Instant;

use super::{log, Config, Conv};
use crate::client::Api;
use crate::sys;

/// Alternating user and assistant messages of 1 KiB, oldest first, in every conversation,
/// each with the context-window cost the server stores with a message it writes (4 tokens
/// of overhead plus a token per 4 characters; `history_cost_floor` in the server).
fn history_sql(per_conversation: usize) -> String {
    format!(
        "INSERT INTO messages (id, conversation_id, role, content, history_cost) \
         SELECT gen_random_uuid(), c.id, \
                CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, \
                left(repeat('earlier turn ' || g || ' of a long conversation. ', 40), 1024), \
                4 + 1024 / 4 \
         FROM conversations c, generate_series(1, {per_conversation}) g ORDER BY c.id, g"
    )
}

/// What [`seed`] created.
pub(super) struct Seeded {
    pub(super) tokens: Arc<Vec<String>>,
    /// One personal API key per user (same order as `tokens`).
    pub(super) keys: Vec<String>,
    pub(super) convs: Vec<Conv>,
    /// The catalogue scenario's, alternating its two models (none unless it runs).
    pub(super) catalogue_convs: Vec<Conv>,
    /// The image scenario's, on its model that reads images (none unless it runs).
    pub(super) image_convs: Vec<Conv>,
}

pub(super) async fn seed(cfg: &Config, api: &Api, db: &str) -> anyhow::Result<Seeded> {
    // Users (argon2 is expensive: create and log in once, two at a time) and conversations.
    let password = "load-test-password-1";
    let mut tokens = Vec::new();
    for chunk in (0..cfg.users).collect::<Vec<_>>().chunks(2) {
        let mut hs = Vec::new();
        for &i in chunk {
            let api = api.clone();
            hs.push(tokio::spawn(async move {
                let name = format!("load_user_{i}");
                if i == 0 {
                    // The first account becomes admin: register it alone, first.
                }
                api.register(&name, password).await?;
                api.login(&name, password).await
            }));
            if i == 0 {
                let t = hs.pop().context("join")?.await??;
                tokens.push(t);
            }
        }
        for h in hs {
            tokens.push(h.await??);
        }
    }
    // Budgets on: every turn reserves, settles and releases a hold (large enough never to run out).
    for role in ["admin", "member"] {
        api.set_role_budget(&tokens[0], role, 1_000_000_000_000)
            .await?;
    }
    let convs_needed = cfg
        .streams
        .last()
        .copied()
        .unwrap_or(0)
        .max(cfg.levels.iter().max().copied().unwrap_or(1) * 2)
        .max(cfg.burst)
        .max(cfg.soak_secs.map_or(0, |_| cfg.soak_streams))
        .max(cfg.held)
        + 64;
    let convs_needed = convs_needed.max(256);
    log(format!(
        "{} users logged in; creating {convs_needed} conversations",
        tokens.len()
    ));
    let mut keys = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        keys.push(api.create_key(t, &format!("load kit {i}")).await?);
    }
    let tokens = Arc::new(tokens);
    let mut all = Vec::new();
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut hs = Vec::new();
    for i in 0..convs_needed {
        let (api, tokens, sem) = (api.clone(), tokens.clone(), sem.clone());
        hs.push(tokio::spawn(async move {
            let _p = sem.acquire().await;
            let user = i % tokens.len();
            api.create_conversation(&tokens[user], &format!("load {i}"))
                .await
                .map(|id| Conv { user, id })
        }));
    }
    for h in hs {
        all.push(h.await??);
    }
    // The catalogue scenario's own conversations, alternating its models: as many as its
    // closed-model sweep can keep busy (twice the highest level) and more.
    let mut catalogue_convs = Vec::new();
    if cfg.catalogue() {
        let n = (cfg.levels.iter().max().copied().unwrap_or(1) * 2 + 64).max(256);
        log(format!(
            "creating {n} catalogue conversations ({})",
            crate::catalogue::MODELS.map(|m| m.0).join(" / ")
        ));
        let mut hs = Vec::new();
        for i in 0..n {
            let (api, tokens, sem) = (api.clone(), tokens.clone(), sem.clone());
            hs.push(tokio::spawn(async move {
                let _p = sem.acquire().await;
                // Pairs of consecutive conversations share a user: every user has both.
                let user = (i / 2) % tokens.len();
                let model = crate::catalogue::model_of(i);
                api.create_conversation_on(
                    &tokens[user],
                    &format!("load catalogue {i}"),
                    Some(model),
                )
                .await
                .map(|id| Conv { user, id })
            }));
        }
        for h in hs {
            catalogue_convs.push(h.await??);
        }
    }
    let mut image_convs = Vec::new();
    if cfg.images() {
        // As many as the closed-model sweep can keep busy (twice the highest level), and more.
        let n = cfg.levels.iter().max().copied().unwrap_or(1) * 2 + 64;
        let n = if cfg.smoke { n } else { n.max(256) };
        log(format!(
            "creating {n} image conversations ({})",
            crate::image::MODEL
        ));
        let mut hs = Vec::new();
        for i in 0..n {
            let (api, tokens, sem) = (api.clone(), tokens.clone(), sem.clone());
            hs.push(tokio::spawn(async move {
                let _p = sem.acquire().await;
                let user = i % tokens.len();
                api.create_conversation_on(
                    &tokens[user],
                    &format!("load image {i}"),
                    Some(crate::image::MODEL),
                )
                .await
                .map(|id| Conv { user, id })
            }));
        }
        for h in hs {
            image_convs.push(h.await??);
        }
    }
    if cfg.history > 0 {
        let t = Instant::now();
        sys::psql_in(&cfg.pg_host, &cfg.pg_port, db, &history_sql(cfg.history))?;
        log(format!(
            "{} earlier messages of 1 KiB added to each of {} conversations in {:.1} s",
            cfg.history,
            all.len(),
            t.elapsed().as_secs_f64()
        ));
    }
    Ok(Seeded {
        tokens,
        keys,
        convs: all,
        catalogue_convs,
        image_convs,
    })
}

/// Checkpoints Postgres, answering "done" or why not.
pub(super) fn checkpoint(cfg: &Config) -> String {
    // A checkpoint still writing out earlier work (say, a test suite that just created and
    // dropped a hundred databases) would land in the measured phases: once, a run's p99 at
    // half load read 17 ms where the runs around it read 2–8.
    match sys::psql(&cfg.pg_host, &cfg.pg_port, "CHECKPOINT") {
        Ok(_) => "done".into(),
        Err(e) => format!("failed ({e})"),
    }
}
