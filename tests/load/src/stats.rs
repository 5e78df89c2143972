//! Percentiles and small helpers.

use std::collections::BTreeMap;

/// Nearest-rank percentile of microsecond samples, in milliseconds.
pub fn pct_ms(sorted_us: &[u64], p: f64) -> Option<f64> {
    if sorted_us.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    let idx = rank.clamp(1, sorted_us.len()) - 1;
    Some(sorted_us[idx] as f64 / 1000.0)
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Dist {
    pub n: usize,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl Dist {
    pub fn of(mut v: Vec<u64>) -> Self {
        v.sort_unstable();
        Self {
            n: v.len(),
            p50_ms: pct_ms(&v, 50.0),
            p95_ms: pct_ms(&v, 95.0),
            p99_ms: pct_ms(&v, 99.0),
            max_ms: v.last().map(|x| *x as f64 / 1000.0),
        }
    }
}

pub fn sub(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? - b?)
}

pub fn count_errors<'a>(errs: impl Iterator<Item = &'a Option<String>>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in errs.flatten() {
        *m.entry(e.clone()).or_insert(0) += 1;
    }
    m
}

pub fn f(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) => format!("{x:.digits$}"),
        None => "–".into(),
    }
}
