//! Image uploads, normalised once: the bytes must be the format their name claims (PNG,
//! JPEG, WebP, GIF; never SVG, which can carry script), the header's dimensions are checked
//! before a pixel is decoded (a 40,000 × 40,000 PNG is a few hundred bytes and 6 GB decoded),
//! the decoder runs under allocation limits, a GIF gives its first frame, the EXIF
//! orientation is applied, the long edge is brought down to [`LONG_EDGE`] and the result is
//! re-encoded (PNG for transparency and for PNG/GIF sources, JPEG q85 otherwise). Turns then
//! send the stored bytes as they are: no image is decoded per turn.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use serde::Serialize;
use tokio::sync::Semaphore;

/// Largest image accepted, in pixels (40 MP: a high-end phone photo, with room).
pub const MAX_PIXELS: u64 = 40_000_000;
/// Longest side accepted, in pixels.
pub const MAX_SIDE: u32 = 16_384;
/// Longest side of a stored image: what providers look at anyway (OpenAI scales to fit 2048).
pub const LONG_EDGE: u32 = 2048;
/// Most memory one decode may allocate.
const MAX_DECODE_ALLOC: u64 = 256 * 1024 * 1024;
/// Images decoded at once across the process: decoding is CPU work and must not starve the
/// blocking pool that file and database work share.
static DECODES: Semaphore = Semaphore::const_new(2);

/// Why an upload was not accepted as an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// SVG, or bytes that are not the image format the name claims.
    #[error("{0}")]
    Unsupported(String),
    /// The bytes claim the format but do not decode (truncated or corrupt).
    #[error("{0}")]
    Invalid(String),
    /// More pixels (or a longer side) than accepted.
    #[error("{0}")]
    TooLarge(String),
}

/// What the upload's answer says about a stored image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ImageInfo {
    /// `image/png` or `image/jpeg`: what is stored.
    pub mime: &'static str,
    pub width: u32,
    pub height: u32,
    /// The image as uploaded.
    pub original: Original,
}

/// The uploaded image before normalisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Original {
    pub width: u32,
    pub height: u32,
    pub bytes: u64,
}

/// A normalised image: the bytes to store, the extension they are stored under, and what
/// the answer says about them.
pub struct Normalised {
    pub bytes: Vec<u8>,
    pub extension: &'static str,
    pub info: ImageInfo,
}

/// The image format a path's extension claims: `Some(Ok(format))` for the accepted ones,
/// `Some(Err(..))` for SVG (refused), `None` for any other file.
pub fn claimed(path: &str) -> Option<Result<ImageFormat, ImageError>> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some(Ok(ImageFormat::Png)),
        "jpg" | "jpeg" => Some(Ok(ImageFormat::Jpeg)),
        "webp" => Some(Ok(ImageFormat::WebP)),
        "gif" => Some(Ok(ImageFormat::Gif)),
        "svg" | "svgz" => Some(Err(ImageError::Unsupported(
            "SVG images are not accepted (they can carry script); upload PNG, JPEG, WebP or GIF"
                .into(),
        ))),
        _ => None,
    }
}

/// `path` with its extension replaced by `extension` when the stored format differs from
/// the one its name claims (`chart.gif` stored as PNG is `chart.png`).
pub fn stored_path(path: &str, claimed: ImageFormat, extension: &str) -> String {
    let same = match claimed {
        ImageFormat::Png => extension == "png",
        ImageFormat::Jpeg => extension == "jpg",
        _ => false,
    };
    match path.rsplit_once('.') {
        Some((stem, _)) if !same => format!("{stem}.{extension}"),
        _ => path.to_owned(),
    }
}

/// Normalises `bytes` claimed to be `format`, off the async workers and at most two at a
/// time.
pub async fn normalise(bytes: Vec<u8>, format: ImageFormat) -> Result<Normalised, ImageError> {
    let _permit = DECODES
        .acquire()
        .await
        .map_err(|_| ImageError::Invalid("the image decoder is shutting down".into()))?;
    tokio::task::spawn_blocking(move || normalise_now(&bytes, format))
        .await
        .map_err(|_| ImageError::Invalid("the image could not be decoded".into()))?
}

fn name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::WebP => "WebP",
        ImageFormat::Gif => "GIF",
        _ => "image",
    }
}

/// The work of [`normalise`], on the calling thread.
pub fn normalise_now(bytes: &[u8], format: ImageFormat) -> Result<Normalised, ImageError> {
    let magic = image::guess_format(bytes).ok();
    if magic != Some(format) {
        return Err(ImageError::Unsupported(format!(
            "the file is named as {} but its bytes are not {}",
            name(format),
            name(format)
        )));
    }
    let corrupt = |e: image::ImageError| match e {
        image::ImageError::Limits(_) => ImageError::TooLarge(format!(
            "the image is too large: at most {} megapixels, {MAX_SIDE} pixels a side and {} \
             MiB decoded are accepted",
            MAX_PIXELS / 1_000_000,
            MAX_DECODE_ALLOC / (1024 * 1024)
        )),
        image::ImageError::Unsupported(u) => {
            ImageError::Unsupported(format!("this {} is not supported: {u}", name(format)))
        }
        other => ImageError::Invalid(format!(
            "the {} is truncated or corrupt: {other}",
            name(format)
        )),
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    // Reads the header only: the dimensions are refused before any pixel is decoded.
    let mut decoder = reader.into_decoder().map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(ImageError::Invalid("the image has no pixels".into()));
    }
    if width > MAX_SIDE || height > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooLarge(format!(
            "the image is {width} × {height} pixels; at most {} megapixels and {MAX_SIDE} \
             pixels a side are accepted",
            MAX_PIXELS / 1_000_000
        )));
    }
    let orientation = decoder.orientation().map_err(corrupt)?;
    // A GIF's decoder yields its first frame.
    let mut img = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    img.apply_orientation(orientation);
    if img.width().max(img.height()) > LONG_EDGE {
        img = img.resize(LONG_EDGE, LONG_EDGE, image::imageops::FilterType::Triangle);
    }
    let png = img.color().has_alpha() || matches!(format, ImageFormat::Png | ImageFormat::Gif);
    let mut out = Cursor::new(Vec::new());
    let encoded = if png {
        let img = if img.color().has_alpha() {
            DynamicImage::ImageRgba8(img.to_rgba8())
        } else {
            DynamicImage::ImageRgb8(img.to_rgb8())
        };
        img.write_to(&mut out, ImageFormat::Png)
    } else {
        JpegEncoder::new_with_quality(&mut out, 85).encode_image(&img.to_rgb8())
    };
    encoded.map_err(|e| ImageError::Invalid(format!("the image could not be re-encoded: {e}")))?;
    let (mime, extension) = if png {
        ("image/png", "png")
    } else {
        ("image/jpeg", "jpg")
    };
    Ok(Normalised {
        info: ImageInfo {
            mime,
            width: img.width(),
            height: img.height(),
            original: Original {
                width,
                height,
                bytes: bytes.len() as u64,
            },
        },
        bytes: out.into_inner(),
        extension,
    })
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
