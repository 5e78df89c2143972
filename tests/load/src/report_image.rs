//! The report's section on the image scenario: the photo and its uploads, each image phase
//! beside the plain phase of the same run, and what reached the model.

use std::fmt::Write;

use crate::bench::Report;
use crate::stats::{f, sub};

pub fn markdown(r: &Report, s: &mut String) {
    let Some(i) = &r.image else {
        return;
    };
    let u = &i.upload;
    let _ = writeln!(s, "\n## Image turns against plain turns (same run)\n");
    let _ = writeln!(s, "The photo: a deterministic {} × {} JPEG of {} bytes, uploaded once by each of {} users before measuring ({} ms server CPU and {:.0} ms wall per upload: decode, resize, re-encode, write); stored as {} {} × {}, {} bytes, which every image turn sends as an `image_url` data URL. The direct baseline of the image phases sends the same data URL, so \"added\" is the server's own work.\n",
        u.photo_size.0, u.photo_size.1, u.photo_bytes, u.uploads, f(u.server_cpu_ms_per_upload, 0), u.wall_ms_per_upload,
        u.stored_mime, u.stored_size.0, u.stored_size.1, u.stored_bytes);
    let _ = writeln!(s, "| phase | turns/s plain / image | TTFT p50 ms plain / image (Δ) | TTFT p99 ms plain / image (Δ) | added TTFT p50 ms plain / image | server CPU ms/turn plain / image (Δ) | image errors |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for c in &i.phases {
        let _ = writeln!(
            s,
            "| {} | {:.0} / {:.0} | {} / {} ({}) | {} / {} ({}) | {} / {} | {} / {} ({}) | {} |",
            c.phase,
            c.plain_turns_per_s,
            c.image_turns_per_s,
            f(c.plain_ttft_p50_ms, 1),
            f(c.image_ttft_p50_ms, 1),
            f(sub(c.image_ttft_p50_ms, c.plain_ttft_p50_ms), 1),
            f(c.plain_ttft_p99_ms, 1),
            f(c.image_ttft_p99_ms, 1),
            f(sub(c.image_ttft_p99_ms, c.plain_ttft_p99_ms), 1),
            f(c.plain_added_ttft_p50_ms, 2),
            f(c.image_added_ttft_p50_ms, 2),
            f(c.plain_cpu_ms_per_turn, 2),
            f(c.image_cpu_ms_per_turn, 2),
            f(c.extra_cpu_ms(), 2),
            c.image_errors
        );
    }
    let up = &i.upstream;
    let _ = writeln!(s, "\nAt the fake upstream: {} image parts ({} bytes of data URLs), {} of them the stored photo (distinct images: {}) — the turns send the file the upload stored, as it is.",
        up.parts, up.bytes, up.parts_of_the_stored_file, up.distinct);
    let samples = |x: &Option<crate::image_probe::Samples>| match x {
        Some(x) => format!(
            "{} of {} samples (and {} in header reads){}",
            x.codec,
            x.total,
            x.header,
            x.top_codec
                .as_ref()
                .map(|t| format!(" (busiest: `{t}`)"))
                .unwrap_or_default()
        ),
        None => "not measured (no `perf`)".to_owned(),
    };
    let _ = writeln!(s, "\nDecodes counted with `perf` (the server's CPU samples in the image codecs and the resizer): during the {} uploads {}; during {} image turns ({} s, two closed loops) {}.",
        u.uploads, samples(&i.upload_samples), i.probe_turns, i.probe_secs, samples(&i.turn_samples));
    let verdict = match i.uploads_worth_per_turn {
        Some(x) if x < 0.5 => "well under one decode per turn: the turn does not decode or resize",
        Some(_) => "**as much as a decode per turn: look (a turn may be decoding or resizing)**",
        None => "not measured",
    };
    let _ = writeln!(s, "Extra server CPU of an image turn ÷ server CPU of one upload: {} ({verdict}). The turn's own image work is reading the 1 MB file, hashing it (SHA-256, recorded with the message) and base64 for the request.",
        f(i.uploads_worth_per_turn, 2));
}
