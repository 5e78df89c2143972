//! Checking a search's answer against what the kit granted its user, and keeping the
//! searches worth explaining (the slowest of each kind, the median one alone).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use super::seed::Seeded;

/// A search worth explaining: (latency µs, user, q, scope).
pub(super) type Sample = (u64, usize, String, Option<String>);

#[derive(Default)]
pub(super) struct Tally {
    pub(super) searches: AtomicU64,
    pub(super) results: AtomicU64,
    pub(super) empty: AtomicU64,
    pub(super) empty_readable: AtomicU64,
    pub(super) empty_examples: Mutex<Vec<String>>,
    pub(super) shared: AtomicU64,
    pub(super) scoped_own: AtomicU64,
    pub(super) scoped_foreign: AtomicU64,
    pub(super) violations: AtomicU64,
    pub(super) examples: Mutex<Vec<String>>,
    /// The slowest search by label.
    pub(super) slowest: Mutex<BTreeMap<&'static str, Sample>>,
    /// Unscoped searches one at a time (for the median).
    pub(super) alone: Mutex<Vec<Sample>>,
}

/// Checks one answer's results against what `user` may read.
#[allow(clippy::too_many_arguments)]
pub(super) fn check(
    tally: &Tally,
    seeded: &Seeded,
    user: usize,
    q: &str,
    scope: Option<&str>,
    body: &[u8],
    elapsed_us: u64,
    under_load: Option<bool>,
) {
    tally.searches.fetch_add(1, Ordering::Relaxed);
    let results: Vec<Value> = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("results").and_then(Value::as_array).cloned())
        .unwrap_or_default();
    match scope {
        Some(s) if seeded.readable[user].contains(s) => {
            tally.scoped_own.fetch_add(1, Ordering::Relaxed)
        }
        Some(_) => tally.scoped_foreign.fetch_add(1, Ordering::Relaxed),
        None => 0,
    };
    if results.is_empty() {
        tally.empty.fetch_add(1, Ordering::Relaxed);
        if scope.is_none_or(|s| seeded.readable[user].contains(s)) {
            tally.empty_readable.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut ex) = tally.empty_examples.lock() {
                if ex.len() < 5 {
                    ex.push(format!(
                        "user {user}, q {q:?}, scope {scope:?}: {}",
                        String::from_utf8_lossy(body)
                    ));
                }
            }
        }
    }
    tally
        .results
        .fetch_add(results.len() as u64, Ordering::Relaxed);
    for r in &results {
        let c = r.get("collection_id").and_then(Value::as_str).unwrap_or("");
        let wrong = !seeded.readable[user].contains(c) || scope.is_some_and(|s| s != c);
        if wrong {
            tally.violations.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut ex) = tally.examples.lock() {
                if ex.len() < 5 {
                    ex.push(format!(
                        "user {user}, q {q:?}, scope {scope:?}: a chunk of collection {c}"
                    ));
                }
            }
        } else if seeded.collections[user].id != c {
            tally.shared.fetch_add(1, Ordering::Relaxed);
        }
    }
    let Some(under_load) = under_load else { return };
    let label = match (under_load, scope) {
        (true, _) => "slowest under load",
        (false, None) => "slowest alone, unscoped",
        (false, Some(s)) if seeded.readable[user].contains(s) => {
            "slowest alone, scoped to the user's collection"
        }
        (false, Some(_)) => "slowest alone, scoped to a collection the user may not read",
    };
    let sample = (elapsed_us, user, q.to_owned(), scope.map(str::to_owned));
    if let Ok(mut s) = tally.slowest.lock() {
        if s.get(label).is_none_or(|(t, ..)| elapsed_us > *t) {
            s.insert(label, sample.clone());
        }
    }
    if !under_load && scope.is_none() {
        if let Ok(mut a) = tally.alone.lock() {
            a.push(sample);
        }
    }
}
