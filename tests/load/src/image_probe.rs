//! Counting image decodes in the server with `perf`: the server is sampled (user-space CPU
//! samples, `perf record -F 499 -p PID`) while the photo is uploaded (where the server must
//! decode, resize and re-encode it: the probe's positive control) and again during image
//! turns (where it must not), and the samples whose function belongs to the image codecs
//! or the resizer are counted. Without `perf` on the PATH (or when it cannot attach) the
//! counts are absent and the report says so; the CPU ratio of `crate::image` remains.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::bench::Ctx;
use crate::scenarios::Route;

/// Functions of the image decoders, encoders and resizer (as `perf` names them).
const CODEC: &[&str] = &[
    "zune_jpeg",
    "zune_core",
    "image::imageops",
    "image::codecs",
    "image::dynimage",
    "image::images",
    "png::",
    "fdeflate",
    "gif::",
    "image_webp",
];

/// Of those, the functions that read an image's header only (a turn reads the stored
/// image's dimensions for its token estimate, without decoding a pixel).
const HEADER: &[&str] = &["::headers::", "dimensions"];

/// Samples of one window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Samples {
    pub total: u64,
    /// In the image codecs or the resizer ([`CODEC`]), header reads left out.
    pub codec: u64,
    /// In the codecs' header readers ([`HEADER`]).
    pub header: u64,
    /// The busiest codec function, for the report.
    pub top_codec: Option<String>,
}

/// A running `perf record` on the server.
pub struct Recording {
    child: Child,
    file: std::path::PathBuf,
}

/// Starts sampling `pid` into `file`; `None` without `perf`.
pub fn start(pid: u32, file: std::path::PathBuf) -> Option<Recording> {
    let child = Command::new("perf")
        .args(["record", "-q", "-F", "499", "-p", &pid.to_string(), "-o"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some(Recording { child, file })
}

impl Recording {
    /// Stops sampling (SIGINT, so `perf` writes its file) and counts.
    pub async fn finish(mut self) -> Option<Samples> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || {
            let _ = self.child.wait();
            count(&file)
        })
        .await
        .ok()
        .flatten()
    }
}

/// How long image turns run with the server sampled (2 closed loops; half in a smoke run).
const PROBE_SECS: f64 = 4.0;

/// Image turns in two closed loops for [`PROBE_SECS`], the server sampled meanwhile; the
/// samples and the turns completed.
pub async fn during_turns(ctx: &Ctx) -> (Option<Samples>, usize, f64) {
    let file = ctx.cfg.out_dir.join("perf-image-turns.data");
    let Some(recording) = start(ctx.server_pid, file) else {
        return (None, 0, 0.0);
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let secs = if ctx.cfg.smoke {
        PROBE_SECS / 2.0
    } else {
        PROBE_SECS
    };
    let until = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    let content = format!("hello {}", ctx.plain().render());
    let mut done = 0;
    let loops = (0..2).map(|_| async {
        let mut ok = 0;
        while tokio::time::Instant::now() < until {
            let Some(conv) = ctx.take_for(Route::Image) else {
                break;
            };
            let start = tokio::time::Instant::now();
            let o = ctx
                .run_turn(
                    Route::Image,
                    &conv,
                    &content,
                    start,
                    Duration::from_secs(60),
                    None,
                )
                .await;
            Ctx::give(ctx.pool_for(Route::Image), conv);
            ok += usize::from(o.ok);
        }
        ok
    });
    for n in futures_util::future::join_all(loops).await {
        done += n;
    }
    (recording.finish().await, done, secs)
}

fn count(file: &std::path::Path) -> Option<Samples> {
    let out = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-q",
            "-n",
        ])
        .args(["-t", "|", "-i"])
        .arg(file)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let _ = std::fs::remove_file(file);
    let s = tally(&String::from_utf8_lossy(&out.stdout));
    (s.total > 0).then_some(s)
}

/// Counts `perf report -n -t '|' --sort sym` lines (`percent|samples|[.] symbol`).
fn tally(text: &str) -> Samples {
    let mut s = Samples::default();
    let mut top = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split('|').collect();
        let [_, n, sym] = fields[..] else {
            continue;
        };
        let Ok(n) = n.trim().parse::<u64>() else {
            continue;
        };
        s.total += n;
        if !CODEC.iter().any(|c| sym.contains(c)) {
            continue;
        }
        if HEADER.iter().any(|h| sym.contains(h)) {
            s.header += n;
        } else {
            s.codec += n;
            if n > top {
                top = n;
                s.top_codec = Some(sym.trim().trim_start_matches("[.]").trim().to_owned());
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_samples_are_counted_apart_from_header_reads() {
        let report = " 20.59% | 717        |[.] core::slice::raw::from_raw_parts\n\
                      8.30%  | 289        |[.] image::imageops::sample::resize\n\
                      1.00%  | 30         |[.] zune_jpeg::mcu::decode_mcu_ycbcr_baseline\n\
                      0.10%  | 3          |[.] zune_jpeg::headers::parse_start_of_frame\n\
                      garbage line\n";
        let s = tally(report);
        assert_eq!((s.total, s.codec, s.header), (1039, 319, 3));
        assert_eq!(
            s.top_codec.as_deref(),
            Some("image::imageops::sample::resize")
        );
    }
}
