//! The result the model sees (DESIGN §15): `{exit, timed_out, limit_hit?, stdout, stderr,
//! duration_ms, cpu_ms, max_rss_bytes, files: [{path, mime, bytes, preview?}]}`, with each
//! stream cut to head and tail so the whole envelope stays under the tool's output cap.

use serde::Serialize;
use serde_json::Value;

use super::files::{Saved, SavedFile};
use crate::sandbox::{LimitHit, RunResult};

/// The tool's output cap: the streams and a few dozen files fit under it.
pub const OUTPUT_CAP_BYTES: usize = 40 * 1024;
/// Bytes of each stream the model sees (head and tail).
const STREAM_BYTES: usize = 8 * 1024;
/// Files listed at most (a run saves few; the cap on files per run is the jail's).
const FILES_LISTED: usize = 50;

#[derive(Serialize)]
struct Envelope<'a> {
    exit: Option<i32>,
    timed_out: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit_hit: Option<LimitHit>,
    stdout: String,
    stderr: String,
    duration_ms: u64,
    cpu_ms: u64,
    max_rss_bytes: u64,
    files: &'a [SavedFile],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    not_saved: &'a [String],
}

pub fn envelope(r: &RunResult, saved: &Saved, skipped: &[String]) -> Value {
    let mut not_saved: Vec<String> = skipped.to_vec();
    not_saved.extend(saved.skipped.iter().cloned());
    not_saved.truncate(FILES_LISTED);
    let files = saved.files.get(..FILES_LISTED).unwrap_or(&saved.files);
    serde_json::to_value(Envelope {
        exit: r.exit,
        timed_out: r.timed_out,
        limit_hit: r.limit_hit,
        stdout: head_and_tail(&r.stdout, STREAM_BYTES),
        stderr: head_and_tail(&r.stderr, STREAM_BYTES),
        duration_ms: millis(r.duration),
        cpu_ms: millis(r.cpu),
        max_rss_bytes: r.max_rss_bytes,
        files,
        not_saved: &not_saved,
    })
    .unwrap_or(Value::Null)
}

pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `s` when it fits in `max` bytes, else its first and last `max / 2` bytes (at char
/// boundaries) with a marker saying how much was left out.
pub fn head_and_tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let half = max / 2;
    let mut head = half;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - half;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &s[..head],
        tail - head,
        &s[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_streams_keep_head_and_tail() {
        assert_eq!(head_and_tail("short", 10), "short");
        let s = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let cut = head_and_tail(&s, 20);
        assert!(
            cut.starts_with("aaaaaaaaaa\n[… 180 bytes left out …]\n"),
            "{cut}"
        );
        assert!(cut.ends_with("bbbbbbbbbb"));
        let wide = "é".repeat(50);
        assert!(head_and_tail(&wide, 11).contains("left out"));
    }
}
