//! The jail's report on fd 3, read by the host. `runner.py` writes, per file under
//! `/mnt/data/outputs`, a JSON header line and the file's bytes, then an `end` line with the
//! code's exit and the limit its error named. The user's code ran in the same process and
//! could have written anything there, so everything is checked again here: paths, the
//! count and size caps, the framing. What does not pass is skipped, never trusted.

use std::path::{Component, Path};

use serde::Deserialize;

use super::{JobLimits, LimitHit, OutputFile};

/// Longest header line accepted.
const MAX_HEADER: usize = 4096;
/// Skipped entries listed one by one; past this, a count.
const MAX_SKIPPED_LISTED: usize = 50;

/// What the report said, checked.
#[derive(Debug, Default)]
pub struct Report {
    pub outputs: Vec<OutputFile>,
    pub skipped: Vec<String>,
    /// Entries skipped past the listed ones.
    pub skipped_more: u64,
    /// The runner's own word on the code's ending, if it got to say it.
    pub end: Option<End>,
}

/// The runner's `end` line.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct End {
    pub exit: i32,
    pub limit: Option<String>,
    /// The runner's peak RSS in KiB (its own and its reaped children's).
    #[serde(default)]
    pub max_rss_kib: Option<u64>,
}

impl Report {
    /// The run's peak RSS. The host's figure (`host_bytes`, from wait4 on bwrap) is at least
    /// the server's own size when it forked: Linux carries a process's peak RSS through
    /// exec, so a big server made every run look big. The runner's own figure is taken when it
    /// gave one within the host's (the code can write on the report's descriptor, so a
    /// figure past what the host saw is not believed).
    pub fn peak_rss_bytes(&self, host_bytes: u64) -> u64 {
        self.end
            .as_ref()
            .and_then(|e| e.max_rss_kib)
            .map(|kib| kib.saturating_mul(1024))
            .filter(|&reported| reported <= host_bytes)
            .unwrap_or(host_bytes)
    }
}

impl Report {
    /// Whether outputs were left behind (over a cap, or not regular files).
    pub fn files_limited(&self) -> bool {
        !self.skipped.is_empty() || self.skipped_more > 0
    }

    /// The limit the runner said the code's error showed.
    pub fn limit_named(&self) -> Option<LimitHit> {
        match self.end.as_ref()?.limit.as_deref()? {
            "memory" => Some(LimitHit::Memory),
            "processes" => Some(LimitHit::Processes),
            _ => None,
        }
    }

    fn skip(&mut self, what: String) {
        if self.skipped.len() < MAX_SKIPPED_LISTED {
            self.skipped.push(what);
        } else {
            self.skipped_more += 1;
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Header {
    File { file: String, size: u64 },
    Skipped { skipped: String, why: String },
    SkippedMore { skipped_more: u64 },
    End { end: End },
}

/// The most bytes a report within `limits` can take (the reader stops keeping past it): the
/// files cannot hold more than `/mnt/data` does.
pub fn max_report_bytes(limits: &JobLimits) -> usize {
    let per_file = limits.max_file_bytes.saturating_add(MAX_HEADER as u64 + 1);
    let files = per_file.saturating_mul(u64::from(limits.max_files)).min(
        limits
            .data_bytes
            .saturating_add(u64::from(limits.max_files) * 4096),
    );
    let all = files.saturating_add(64 * 1024 + MAX_SKIPPED_LISTED as u64 * MAX_HEADER as u64);
    usize::try_from(all).unwrap_or(usize::MAX)
}

/// Parses the report `bytes` (cut at [`max_report_bytes`] when `truncated`).
pub fn parse(bytes: &[u8], truncated: bool, limits: &JobLimits) -> Report {
    let mut report = Report::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some(nl) = rest.iter().take(MAX_HEADER).position(|&b| b == b'\n') else {
            report.skip("the rest of the outputs: the report was malformed".into());
            break;
        };
        let (line, after) = rest.split_at(nl);
        rest = after.get(1..).unwrap_or_default();
        let header = match serde_json::from_slice::<Header>(line) {
            Ok(h) => h,
            Err(_) => {
                report.skip("the rest of the outputs: the report was malformed".into());
                break;
            }
        };
        match header {
            Header::File { file, size } => {
                let Ok(size) = usize::try_from(size) else {
                    report.skip(format!("{file}: malformed"));
                    break;
                };
                if rest.len() < size {
                    report.skip(format!("{file}: cut short"));
                    break;
                }
                let (body, after) = rest.split_at(size);
                rest = after;
                take(&mut report, file, body, limits);
            }
            Header::Skipped { skipped, why } => report.skip(format!("{skipped}: {why}")),
            Header::SkippedMore { skipped_more } => {
                report.skipped_more = report.skipped_more.saturating_add(skipped_more);
            }
            Header::End { end } => report.end = Some(end),
        }
    }
    if truncated {
        report.skip("the rest of the outputs: over the limit of the run's outputs".into());
    }
    report
}

fn take(report: &mut Report, path: String, body: &[u8], limits: &JobLimits) {
    if let Err(why) = check_path(&path) {
        report.skip(format!("{}: {why}", path.escape_debug()));
    } else if report.outputs.iter().any(|o| o.path == path) {
        report.skip(format!("{path}: listed twice"));
    } else if report.outputs.len() >= limits.max_files as usize {
        report.skip(format!(
            "{path}: over the limit of {} files",
            limits.max_files
        ));
    } else if body.len() as u64 > limits.max_file_bytes {
        report.skip(format!(
            "{path}: larger than {} bytes",
            limits.max_file_bytes
        ));
    } else {
        report.outputs.push(OutputFile {
            path,
            bytes: body.to_vec(),
        });
    }
}

/// A path relative to the outputs folder: plain names, nothing that climbs or hides.
fn check_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() || path.len() > 1024 || path.contains('\0') || path.contains('\\') {
        return Err("not a usable name");
    }
    let p = Path::new(path);
    for c in p.components() {
        match c {
            Component::Normal(name) if name.len() <= 255 => {}
            _ => return Err("not a plain relative path"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_runners_peak_is_taken_only_within_what_the_host_saw() {
        let end = |kib: Option<u64>| {
            let line = match kib {
                Some(k) => {
                    format!("{{\"end\": {{\"exit\": 0, \"limit\": null, \"max_rss_kib\": {k}}}}}\n")
                }
                None => "{\"end\": {\"exit\": 0, \"limit\": null}}\n".to_owned(),
            };
            parse(line.as_bytes(), false, &limits())
        };
        // The host saw the server's 700 MiB at fork; the run itself peaked at 12 MiB.
        assert_eq!(end(Some(12 << 10)).peak_rss_bytes(700 << 20), 12 << 20);
        // A figure past the host's is the code writing on the report: not believed.
        assert_eq!(end(Some(900 << 10)).peak_rss_bytes(700 << 20), 700 << 20);
        assert_eq!(end(None).peak_rss_bytes(700 << 20), 700 << 20);
    }

    fn limits() -> JobLimits {
        JobLimits {
            wall: Duration::from_secs(1),
            cpu: Duration::from_secs(1),
            memory_bytes: 1 << 20,
            max_processes: 8,
            tmp_bytes: 1 << 20,
            data_bytes: 1 << 20,
            max_output_bytes: 100,
            max_files: 2,
            max_file_bytes: 5,
        }
    }

    fn file(path: &str, body: &[u8]) -> Vec<u8> {
        let mut out = format!("{{\"file\":{path:?},\"size\":{}}}\n", body.len()).into_bytes();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn files_and_the_end_are_read_back() {
        let mut bytes = file("a.csv", b"x,y\n");
        bytes.extend(file("sub/b.png", b"PNG"));
        bytes.extend(br#"{"end":{"exit":3,"limit":"memory"}}"#);
        bytes.push(b'\n');
        let r = parse(&bytes, false, &limits());
        assert_eq!(r.outputs.len(), 2);
        assert_eq!(r.outputs[1].path, "sub/b.png");
        assert_eq!(r.outputs[1].bytes, b"PNG");
        assert_eq!(r.limit_named(), Some(LimitHit::Memory));
        assert!(!r.files_limited());
    }

    #[test]
    fn forged_entries_are_checked_again() {
        let mut bytes = file("../escape", b"1");
        bytes.extend(file("/etc/x", b"1"));
        bytes.extend(file("big", b"123456"));
        bytes.extend(file("ok1", b"1"));
        bytes.extend(file("ok1", b"1"));
        bytes.extend(file("ok2", b"1"));
        bytes.extend(file("ok3", b"1"));
        let r = parse(&bytes, false, &limits());
        let names: Vec<_> = r.outputs.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(names, ["ok1", "ok2"]);
        assert_eq!(r.skipped.len(), 5, "{:?}", r.skipped);
        assert!(r.files_limited());
    }

    #[test]
    fn garbage_and_short_bodies_stop_the_reading() {
        let r = parse(b"not json\n", false, &limits());
        assert!(r.outputs.is_empty());
        assert_eq!(r.skipped.len(), 1);
        let r = parse(br#"{"file":"a","size":99}"#, false, &limits());
        assert!(r.outputs.is_empty());
        let mut cut = file("a", b"1");
        cut.extend(br#"{"file":"b","size":4}"#);
        cut.extend(b"\nxy");
        let r = parse(&cut, false, &limits());
        assert_eq!(r.outputs.len(), 1);
        assert_eq!(r.skipped, ["b: cut short"]);
    }
}
