//! Full-text search under load (`--search`, and briefly in every smoke run): one searcher
//! owns `--search-own` messages while the other users hold `--search-others`, every one of
//! which holds the searched words (the worst case for a plan that starts from the words).
//!
//! Phase 1 samples a bystander's conversation list alone; phase 2 runs `SEARCHERS`
//! concurrent closed loops of the searcher's own conversation list (the cheapest request:
//! what any equally busy neighbour costs a 2-core machine) while the bystander's list is
//! sampled; phase 3 runs `SEARCHERS` concurrent searches instead (a phrase that matches and
//! one that matches nothing, which walks every message of the searcher). The report gives
//! the search's percentiles and the bystander's in each phase, so "search never slows
//! another user's requests" is a ratio of the same run: during searches against during
//! equally many cheap requests.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::{log, Ctx, Report};
use crate::client::us;
use crate::stats::{f, Dist};
use crate::sys;

/// Concurrent searches in phase 2.
const SEARCHERS: usize = 4;
/// Conversations the searcher's and the others' messages are spread over.
const OWN_CONVERSATIONS: usize = 100;
const OTHER_CONVERSATIONS: usize = 1000;
/// A search answers within this or counts as an error (the old plan took seconds).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchResult {
    pub own_messages: usize,
    pub other_messages: usize,
    pub seed_secs: f64,
    pub searchers: usize,
    pub phase_secs: f64,
    /// Searches that matched (a phrase in 1 of 100 of the searcher's messages).
    pub matching: Dist,
    /// Searches that matched nothing: a walk over all of the searcher's messages.
    pub missing: Dist,
    pub search_errors: BTreeMap<String, u64>,
    /// The bystander's `GET /api/conversations`: alone, during as many cheap requests as
    /// searches, and during the searches.
    pub list_alone: Dist,
    pub list_beside_lists: Dist,
    pub list_during: Dist,
    pub list_errors: BTreeMap<String, u64>,
}

/// Seeds with SQL: `own` messages for user 1 and `others` for everyone else.
fn seed(ctx: &Ctx, own: usize, others: usize) -> anyhow::Result<()> {
    let (h, p, db) = (&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db);
    let conversations = |who: &str, n: usize, tag: &str| {
        format!(
            "INSERT INTO conversations (id, user_id, title) \
             SELECT gen_random_uuid(), u.id, '{tag} ' || g \
               FROM users u, generate_series(1, {n}) g WHERE {who}"
        )
    };
    let messages = |tag: &str, n: usize, content: &str| {
        format!(
            "INSERT INTO messages (id, conversation_id, role, content) \
             SELECT gen_random_uuid(), c.id, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, \
                    {content} \
               FROM (SELECT id FROM conversations WHERE title LIKE '{tag} %') c, generate_series(1, {n}) g"
        )
    };
    let users: usize = sys::psql_in(h, p, db, "SELECT count(*) FROM users")?.parse()?;
    let per_other_user = OTHER_CONVERSATIONS.div_ceil(users.saturating_sub(1).max(1));
    sys::psql_in(
        h,
        p,
        db,
        &conversations("u.username = 'load_user_1'", OWN_CONVERSATIONS, "mine"),
    )?;
    sys::psql_in(
        h,
        p,
        db,
        &conversations("u.username <> 'load_user_1'", per_other_user, "theirs"),
    )?;
    let own_per = own.div_ceil(OWN_CONVERSATIONS);
    // One message in a hundred holds the phrase; the others hold its words apart.
    sys::psql_in(
        h,
        p,
        db,
        &messages(
            "mine",
            own_per,
            "CASE WHEN g % 100 = 0 THEN 'the quarterly budget review, take ' || g \
              ELSE left(repeat('a review of turn ' || g || ' and its budget. ', 20), 512) END",
        ),
    )?;
    let other_per = others.div_ceil(per_other_user * users.saturating_sub(1).max(1));
    sys::psql_in(
        h,
        p,
        db,
        &messages(
            "theirs",
            other_per,
            "left(repeat('budget review ' || g || ' of someone else''s chat. ', 20), 512)",
        ),
    )?;
    sys::psql_in(h, p, db, "ANALYZE")?;
    Ok(())
}

/// Requests `GET path` until `until`, one at a time; latencies in µs and errors.
async fn sample(
    ctx: &Ctx,
    token: &str,
    query: &[(&str, &str)],
    until: Instant,
) -> (Vec<u64>, Vec<String>) {
    let (mut lat, mut errs) = (Vec::new(), Vec::new());
    while Instant::now() < until {
        let t = Instant::now();
        let r = ctx
            .api
            .http
            .get(format!("{}/api/conversations", ctx.api.base))
            .query(query)
            .bearer_auth(token)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await;
        match r {
            Ok(r) if r.status().is_success() => match r.bytes().await {
                Ok(_) => lat.push(us(t.elapsed())),
                Err(e) => errs.push(format!("body: {e}")),
            },
            Ok(r) if r.status().as_u16() == 429 => {
                // Over the server's search slots: counted, and a pause as a client would.
                errs.push("HTTP 429 (search slots busy)".into());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(r) => errs.push(format!("HTTP {}", r.status().as_u16())),
            Err(e) if e.is_timeout() => errs.push("timeout".into()),
            Err(_) => errs.push("request".into()),
        }
    }
    (lat, errs)
}

fn tally(errs: impl IntoIterator<Item = String>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in errs {
        *m.entry(e).or_insert(0) += 1;
    }
    m
}

type Loop = tokio::task::JoinHandle<(bool, (Vec<u64>, Vec<String>))>;

/// `SEARCHERS` closed loops of the searcher's requests for `phase`: their conversation list,
/// or searches alternating between the two phrases of `queries` (the first matches).
fn busy(
    ctx: &Arc<Ctx>,
    phase: Duration,
    queries: Option<(&'static str, &'static str)>,
) -> (Vec<Loop>, Instant) {
    let until = Instant::now() + phase;
    let loops = (0..SEARCHERS)
        .map(|i| {
            let ctx = ctx.clone();
            let q = queries.map(|(hit, miss)| if i % 2 == 0 { hit } else { miss });
            tokio::spawn(async move {
                let token = ctx.tokens[1 % ctx.tokens.len()].clone();
                let query: Vec<(&str, &str)> = q.iter().map(|q| ("q", *q)).collect();
                (i % 2 == 0, sample(&ctx, &token, &query, until).await)
            })
        })
        .collect();
    (loops, until)
}

pub async fn search(ctx: &Arc<Ctx>, own: usize, others: usize, secs: f64) -> SearchResult {
    let t = Instant::now();
    if let Err(e) = seed(ctx, own, others) {
        log(format!("search: seeding failed: {e:#}"));
        return SearchResult::default();
    }
    let seed_secs = t.elapsed().as_secs_f64();
    log(format!(
        "search: {own} own and {others} other messages seeded in {seed_secs:.1} s"
    ));
    let phase = Duration::from_secs_f64(secs);
    let bystander = ctx.tokens[2 % ctx.tokens.len()].clone();
    let (alone, alone_errs) = sample(ctx, &bystander, &[], Instant::now() + phase).await;

    let (lists, until) = busy(ctx, phase, None);
    let (beside, beside_errs) = sample(ctx, &bystander, &[], until).await;
    for h in lists {
        let _ = h.await;
    }
    let (searches, until) = busy(ctx, phase, Some(("\"budget review\"", "\"review budget\"")));
    let (during, during_errs) = sample(ctx, &bystander, &[], until).await;
    let (mut matching, mut missing, mut search_errs) = (Vec::new(), Vec::new(), Vec::new());
    for h in searches {
        if let Ok((hit, (lat, errs))) = h.await {
            if hit { &mut matching } else { &mut missing }.extend(lat);
            search_errs.extend(errs);
        }
    }
    SearchResult {
        own_messages: own,
        other_messages: others,
        seed_secs,
        searchers: SEARCHERS,
        phase_secs: secs,
        matching: Dist::of(matching),
        missing: Dist::of(missing),
        search_errors: tally(search_errs),
        list_alone: Dist::of(alone),
        list_beside_lists: Dist::of(beside),
        list_during: Dist::of(during),
        list_errors: tally(alone_errs.into_iter().chain(beside_errs).chain(during_errs)),
    }
}

/// Whether the phase measured anything.
pub fn failures(r: &Report) -> Vec<String> {
    match &r.search {
        Some(s) if s.matching.n == 0 || s.missing.n == 0 => {
            vec![format!(
                "search: no search answered ({:?})",
                s.search_errors
            )]
        }
        Some(s) if s.list_alone.n == 0 || s.list_during.n == 0 => {
            vec![format!(
                "search: the bystander's list never answered ({:?})",
                s.list_errors
            )]
        }
        _ => Vec::new(),
    }
}

pub fn markdown(r: &Report, s: &mut String) {
    let Some(x) = &r.search else { return };
    let _ = writeln!(
        s,
        "\n## Full-text search: {} own messages, {} of other users\n",
        x.own_messages, x.other_messages
    );
    let _ = writeln!(
        s,
        "Seeded in {:.1} s (every other user's message holds the searched words). {} searches \
         at once for {:.0} s, half a phrase that matches one in a hundred of the searcher's \
         messages, half one that matches none (a walk over all of them); a bystander lists \
         their conversations one request at a time: alone, beside as many closed loops of the \
         searcher's own (cheap) conversation list, and beside the searches.\n",
        x.seed_secs, x.searchers, x.phase_secs
    );
    let _ = writeln!(
        s,
        "| requests | n | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|"
    );
    for (label, d) in [
        ("search, matching phrase", &x.matching),
        ("search, phrase matching nothing", &x.missing),
        ("bystander's list, alone", &x.list_alone),
        (
            "bystander's list, beside as many cheap lists",
            &x.list_beside_lists,
        ),
        ("bystander's list, beside the searches", &x.list_during),
    ] {
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} |",
            d.n,
            f(d.p50_ms, 1),
            f(d.p95_ms, 1),
            f(d.p99_ms, 1),
            f(d.max_ms, 1)
        );
    }
    let _ = writeln!(
        s,
        "\nBystander p99 beside the searches / beside as many cheap lists: {}. Search errors \
         {:?}; list errors {:?}.",
        match (x.list_during.p99_ms, x.list_beside_lists.p99_ms) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".into(),
        },
        x.search_errors,
        x.list_errors
    );
}
