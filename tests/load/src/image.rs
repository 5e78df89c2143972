//! The `image` scenario (issues 43 item 4, 44 item 7): turns that attach one ~1 MB photo to
//! a model that reads images, measured against the plain text turn of the same run.
//!
//! The photo is made here, deterministically ([`photo`]: a 2400 × 1600 gradient with
//! texture and noise, JPEG, about 1 MiB), and each user uploads it ONCE, before anything is
//! measured (`PUT /api/files/load/photo.jpg`): the server decodes, resizes (to its long
//! edge of 2048) and re-encodes it then, and a turn only reads the stored file and sends it
//! as an `image_url` part. The image conversations are on [`MODEL`], a catalogue model on
//! the first fake upstream whose `input` includes `image`; the direct baseline sends the
//! stored photo's data URL to the fake too, so "added" is the server's own work.
//!
//! Resizing once per upload is checked by counting: the server is sampled with `perf`
//! during the uploads and during a few seconds of image turns, and the samples in the image
//! codecs and the resizer are counted (`crate::image_probe`: many in the uploads, none in
//! the turns); the fake upstream digests every image part it is sent (`crate::fake_images`),
//! and every one must be the stored file the kit downloads after its upload; and the server
//! CPU an image turn adds over a plain turn is set against the CPU of one upload (decode,
//! resize, encode), so a decode per turn would show as about one upload's worth per turn.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{json, Value};

use crate::bench::{Ctx, Phase, ScenarioResult};
use crate::client::Api;
use crate::image_probe::{self, Samples};
use crate::sys;

/// `--scenarios` key.
pub const KEY: &str = "image";
/// Report name.
pub const NAME: &str = "image turn: one ~1 MB photo attached (a model that reads images)";
/// The catalogue model the image conversations are on.
pub const MODEL: &str = "eyes";
/// What the server calls it at the fake upstream.
const UPSTREAM_MODEL: &str = "fake-eyes";
/// Where each user uploads the photo.
const PATH: &str = "load/photo.jpg";
/// The photo's size, in pixels: longer than the server's long edge (2048), so the upload
/// resizes.
const PHOTO_SIZE: (u32, u32) = (2400, 1600);
/// Largest photo made: the first JPEG quality whose file fits is used.
const PHOTO_MAX_BYTES: usize = 1_100_000;

/// The image scenario's catalogue entry (on the `default` provider, the first fake upstream).
pub fn model_entry() -> Value {
    json!({"name": MODEL, "provider": "default", "upstream_model": UPSTREAM_MODEL,
           "input": ["text", "image"]})
}

/// A photo-like JPEG: a sky-to-ground gradient with a texture and per-pixel noise (so it
/// compresses like a photo, not like a drawing), the same bytes every run.
pub fn photo() -> anyhow::Result<Vec<u8>> {
    use image::codecs::jpeg::JpegEncoder;
    let (w, h) = PHOTO_SIZE;
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 41) as f32 - 20.0
    };
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let texture = ((fx * 37.0).sin() * (fy * 23.0).cos()) * 30.0;
        let base = if fy < 0.55 {
            [90.0 + 100.0 * fy, 140.0 + 60.0 * fy, 220.0 - 40.0 * fy]
        } else {
            [70.0 + 50.0 * fx, 110.0 - 30.0 * fy, 50.0 + 20.0 * fx]
        };
        let mut px = |c: f32| (c + texture + noise()).clamp(0.0, 255.0) as u8;
        image::Rgb([px(base[0]), px(base[1]), px(base[2])])
    });
    let mut out = Vec::new();
    for quality in [92, 88, 84, 80, 75, 70, 60, 50] {
        out.clear();
        JpegEncoder::new_with_quality(&mut out, quality)
            .encode_image(&img)
            .context("encoding the photo")?;
        if out.len() <= PHOTO_MAX_BYTES {
            break;
        }
    }
    Ok(out)
}

/// The photo as uploaded and as stored, and what the uploads cost the server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Upload {
    pub photo_bytes: usize,
    pub photo_size: (u32, u32),
    pub stored_path: String,
    pub stored_bytes: usize,
    pub stored_size: (u32, u32),
    pub stored_mime: String,
    /// One per user, one after the other.
    pub uploads: usize,
    /// Server CPU per upload (decode, resize, encode, write).
    pub server_cpu_ms_per_upload: Option<f64>,
    pub wall_ms_per_upload: f64,
}

/// What the image turns need: each user's stored path, the stored photo's data URL (the
/// direct baseline's image), and the uploads.
pub struct Prepared {
    pub paths: Vec<String>,
    pub data_url: Arc<String>,
    pub upload: Upload,
    /// The server's CPU samples during the uploads ([`crate::image_probe`]).
    pub upload_samples: Option<Samples>,
}

/// Each user (token) uploads the photo once, the server sampled meanwhile (files in
/// `out_dir`); the stored file is read back once.
pub async fn prepare(
    api: &Api,
    tokens: &[String],
    server_pid: u32,
    out_dir: &std::path::Path,
) -> anyhow::Result<Prepared> {
    let bytes = photo()?;
    let mut upload = Upload {
        photo_bytes: bytes.len(),
        photo_size: PHOTO_SIZE,
        uploads: tokens.len(),
        ..Default::default()
    };
    let mut paths = Vec::new();
    let recording = image_probe::start(server_pid, out_dir.join("perf-uploads.data"));
    // `perf` attaches before the first upload.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ticks0 = sys::cpu_ticks(server_pid);
    let t0 = tokio::time::Instant::now();
    for token in tokens {
        let r = api
            .http
            .put(format!("{}/api/files/{PATH}", api.base))
            .bearer_auth(token)
            .body(bytes.clone())
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .context("uploading the photo")?;
        let status = r.status();
        let answer: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(
            status.as_u16() == 201 && answer.get("image").is_some(),
            "uploading the photo: HTTP {status}: {answer}"
        );
        let info = &answer["image"];
        upload.stored_size = (
            info["width"].as_u64().unwrap_or(0) as u32,
            info["height"].as_u64().unwrap_or(0) as u32,
        );
        upload.stored_mime = info["mime"].as_str().unwrap_or("").to_owned();
        paths.push(answer["path"].as_str().unwrap_or(PATH).to_owned());
    }
    let n = tokens.len().max(1) as f64;
    upload.wall_ms_per_upload = t0.elapsed().as_secs_f64() * 1000.0 / n;
    upload.server_cpu_ms_per_upload = ticks0
        .zip(sys::cpu_ticks(server_pid))
        .map(|(a, b)| b.saturating_sub(a) as f64 * 1000.0 / sys::CLK_TCK / n);
    let upload_samples = match recording {
        Some(r) => r.finish().await,
        None => None,
    };
    upload.stored_path = paths.first().cloned().unwrap_or_default();
    let stored = api
        .http
        .get(format!("{}/api/files/{}", api.base, upload.stored_path))
        .bearer_auth(&tokens[0])
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .context("reading the stored photo")?
        .bytes()
        .await?;
    upload.stored_bytes = stored.len();
    use base64::Engine;
    let data_url = format!(
        "data:{};base64,{}",
        upload.stored_mime,
        base64::engine::general_purpose::STANDARD.encode(&stored)
    );
    crate::bench::log(format!(
        "photo: {} bytes {}×{} uploaded by {} users ({} ms server CPU each), stored as {} bytes {}×{}",
        upload.photo_bytes,
        PHOTO_SIZE.0,
        PHOTO_SIZE.1,
        upload.uploads,
        crate::stats::f(upload.server_cpu_ms_per_upload, 0),
        upload.stored_bytes,
        upload.stored_size.0,
        upload.stored_size.1
    ));
    Ok(Prepared {
        paths,
        data_url: Arc::new(data_url),
        upload,
        upload_samples,
    })
}

/// One phase of the image scenario beside the plain phase it is compared with.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Compare {
    /// `closed c=N` (same concurrency for both) or `half load` (each at half its own
    /// saturation).
    pub phase: String,
    pub plain_turns_per_s: f64,
    pub image_turns_per_s: f64,
    pub plain_ttft_p50_ms: Option<f64>,
    pub image_ttft_p50_ms: Option<f64>,
    pub plain_ttft_p99_ms: Option<f64>,
    pub image_ttft_p99_ms: Option<f64>,
    /// Server-added TTFT (through the server − direct to the fake, the direct request
    /// carrying the same image for the image turn).
    pub plain_added_ttft_p50_ms: Option<f64>,
    pub image_added_ttft_p50_ms: Option<f64>,
    pub plain_cpu_ms_per_turn: Option<f64>,
    pub image_cpu_ms_per_turn: Option<f64>,
    pub image_errors: u64,
}

impl Compare {
    fn of(phase: String, plain: &Phase, image: &Phase) -> Self {
        Self {
            phase,
            plain_turns_per_s: plain.throughput_per_s,
            image_turns_per_s: image.throughput_per_s,
            plain_ttft_p50_ms: plain.ttft.p50_ms,
            image_ttft_p50_ms: image.ttft.p50_ms,
            plain_ttft_p99_ms: plain.ttft.p99_ms,
            image_ttft_p99_ms: image.ttft.p99_ms,
            plain_added_ttft_p50_ms: plain.added_ttft_p50_ms,
            image_added_ttft_p50_ms: image.added_ttft_p50_ms,
            plain_cpu_ms_per_turn: plain.server_cpu_ms_per_turn,
            image_cpu_ms_per_turn: image.server_cpu_ms_per_turn,
            image_errors: image.errors.values().sum(),
        }
    }

    /// Server CPU an image turn adds over a plain one.
    pub fn extra_cpu_ms(&self) -> Option<f64> {
        crate::stats::sub(self.image_cpu_ms_per_turn, self.plain_cpu_ms_per_turn)
    }
}

/// The image parts that reached the fake upstream.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Upstream {
    pub parts: u64,
    pub bytes: u64,
    /// Parts whose URL is the stored photo's data URL.
    pub parts_of_the_stored_file: u64,
    /// Distinct images seen (1: every part was the stored file).
    pub distinct: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ImageResult {
    pub upload: Upload,
    pub phases: Vec<Compare>,
    pub upstream: Upstream,
    /// Extra server CPU per image turn ÷ server CPU per upload: what share of an upload's
    /// decode-resize-encode a turn repeats, at most (~0 if nothing is decoded per turn;
    /// ≥ ~1 if it is). From the half-load phases (or the last closed level).
    pub uploads_worth_per_turn: Option<f64>,
    /// The server's CPU samples in the image codecs: during the uploads (the positive
    /// control) and during `probe_secs` of image turns ([`image_probe::during_turns`]).
    pub upload_samples: Option<Samples>,
    pub turn_samples: Option<Samples>,
    pub probe_turns: usize,
    pub probe_secs: f64,
}

/// The image scenario against the plain one of the same run, and what reached the fake.
pub async fn result(ctx: &Ctx, prepared: &Prepared, scenarios: &[ScenarioResult]) -> ImageResult {
    let find = |name: &str| scenarios.iter().find(|s| s.name == name);
    let (turn_samples, probe_turns, probe_secs) = image_probe::during_turns(ctx).await;
    let mut r = ImageResult {
        upload: prepared.upload.clone(),
        upload_samples: prepared.upload_samples.clone(),
        turn_samples,
        probe_turns,
        probe_secs,
        ..Default::default()
    };
    if let (Some(plain), Some(image)) = (find(crate::scenarios::SCENARIOS[0].name), find(NAME)) {
        for i in &image.sweep {
            let same = plain.sweep.iter().find(|p| p.concurrency == i.concurrency);
            if let (Some(p), Some(c)) = (same, i.concurrency) {
                r.phases.push(Compare::of(format!("closed c={c}"), p, i));
            }
        }
        if let (Some(p), Some(i)) = (&plain.half, &image.half) {
            r.phases.push(Compare::of("half load".into(), p, i));
        }
    }
    let basis = r.phases.iter().rev().find(|c| c.extra_cpu_ms().is_some());
    r.uploads_worth_per_turn = basis
        .and_then(Compare::extra_cpu_ms)
        .zip(r.upload.server_cpu_ms_per_upload.filter(|u| *u > 0.0))
        .map(|(extra, upload)| extra.max(0.0) / upload);
    let stats: Option<Value> = async {
        ctx.direct_http
            .get(format!("{}/control/stats", ctx.fake_base))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()
    }
    .await;
    if let Some(images) = stats.as_ref().and_then(|s| s.get("images")) {
        let expected = crate::fake_images::digest(&prepared.data_url);
        let digests = images["digests"].as_object().cloned().unwrap_or_default();
        r.upstream = Upstream {
            parts: images["parts"].as_u64().unwrap_or(0),
            bytes: images["bytes"].as_u64().unwrap_or(0),
            parts_of_the_stored_file: digests.get(&expected).and_then(Value::as_u64).unwrap_or(0),
            distinct: digests.len(),
        };
    }
    r
}

/// What went wrong with the image scenario's own checks.
pub fn failures(r: &crate::bench::Report) -> Vec<String> {
    let Some(i) = &r.image else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if i.upstream.parts == 0 {
        out.push("image: no image part reached the fake upstream".into());
    } else if i.upstream.parts_of_the_stored_file != i.upstream.parts {
        out.push(format!(
            "image: {} of {} image parts at the fake upstream were not the stored photo",
            i.upstream.parts - i.upstream.parts_of_the_stored_file,
            i.upstream.parts
        ));
    }
    // Decoding per turn: codec samples during image turns (more than noise: 1 %), where the
    // uploads show the probe sees them.
    if let (Some(u), Some(t)) = (&i.upload_samples, &i.turn_samples) {
        if u.codec > 0 && t.codec * 100 > t.total {
            out.push(format!(
                "image: the server ran image codecs during image turns ({} of {} samples, \
                 top {:?}): a turn decodes or resizes",
                t.codec, t.total, t.top_codec
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_photo_is_about_a_megabyte_and_the_same_every_run() {
        let a = photo().unwrap();
        assert!(
            (850_000..=PHOTO_MAX_BYTES).contains(&a.len()),
            "{}",
            a.len()
        );
        assert_eq!(a, photo().unwrap());
        assert_eq!(image::guess_format(&a).unwrap(), image::ImageFormat::Jpeg);
    }
}
