//! Image uploads, normalised once: the bytes must be the format their name claims (PNG,
//! JPEG, WebP, GIF; never SVG, which can carry script), the header's dimensions are checked
//! before a pixel is decoded (a 40,000 × 40,000 PNG is a few hundred bytes and 6 GB decoded),
//! the decoder runs under allocation limits, a GIF gives its first frame, the EXIF
//! orientation is applied, the long edge is brought down to [`ImageLimits::resize_to_px`]
//! and the result is re-encoded (PNG for transparency and for PNG/GIF sources, JPEG q85
//! otherwise). Turns then send the stored bytes as they are: no image is decoded per turn.
//! The limits are settings (`[images]`, [`ImageLimits`]); the process's [`ImageDecoders`]
//! hold them with the permits that bound decodes at once, and the workspace store hands
//! them to every caller.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use serde::Serialize;

pub use super::image_limits::{ImageDecoders, ImageLimits};

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

impl ImageDecoders {
    /// Normalises `bytes` claimed to be `format`, off the async workers and at most
    /// [`ImageLimits::concurrent_decodes`] at a time.
    pub async fn normalise(
        &self,
        bytes: Vec<u8>,
        format: ImageFormat,
    ) -> Result<Normalised, ImageError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ImageError::Invalid("the image decoder is shutting down".into()))?;
        let limits = self.limits;
        tokio::task::spawn_blocking(move || normalise_now(&bytes, format, &limits))
            .await
            .map_err(|_| ImageError::Invalid("the image could not be decoded".into()))?
    }
}

/// Why an image of `width` × `height` is refused under `limits`, before it is decoded.
pub fn too_large(width: u32, height: u32, limits: &ImageLimits) -> Option<String> {
    let side = limits.max_side_px;
    let pixels = u64::from(width) * u64::from(height);
    (width > side || height > side || pixels > limits.max_pixels).then(|| {
        format!(
            "the image is {width} × {height} pixels; at most {} and {side} pixels a side \
             are accepted",
            megapixels(limits.max_pixels)
        )
    })
}

/// `40 megapixels` (`1 megapixel`), or `1500000 pixels` for a limit that is not a whole
/// number of them.
fn megapixels(pixels: u64) -> String {
    if pixels == 1_000_000 {
        "1 megapixel".to_owned()
    } else if pixels.is_multiple_of(1_000_000) {
        format!("{} megapixels", pixels / 1_000_000)
    } else {
        format!("{pixels} pixels")
    }
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

/// The work of [`ImageDecoders::normalise`], on the calling thread.
pub fn normalise_now(
    bytes: &[u8],
    format: ImageFormat,
    limits: &ImageLimits,
) -> Result<Normalised, ImageError> {
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
            "the image is too large: at most {}, {} pixels a side and {} MiB decoded are \
             accepted",
            megapixels(limits.max_pixels),
            limits.max_side_px,
            limits.decode_memory_mb
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
    let mut decoding = Limits::default();
    decoding.max_image_width = Some(limits.max_side_px);
    decoding.max_image_height = Some(limits.max_side_px);
    decoding.max_alloc = Some(limits.decode_memory_bytes());
    reader.limits(decoding);
    // Reads the header only: the dimensions are refused before any pixel is decoded.
    let mut decoder = reader.into_decoder().map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(ImageError::Invalid("the image has no pixels".into()));
    }
    if let Some(why) = too_large(width, height, limits) {
        return Err(ImageError::TooLarge(why));
    }
    let orientation = decoder.orientation().map_err(corrupt)?;
    // A GIF's decoder yields its first frame.
    let mut img = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    img.apply_orientation(orientation);
    let edge = limits.resize_to_px;
    if img.width().max(img.height()) > edge {
        img = img.resize(edge, edge, image::imageops::FilterType::Triangle);
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
