//! `[images]`: how large an image may be and how much work normalising one may take. An
//! operator with large scans raises the pixel limits; one on a small machine lowers the
//! decoder's memory and the decodes at once; one whose models look at more than 2048 px
//! raises the stored long edge. The values are checked at startup, so a zero or absurd one
//! stops the server with the key named instead of refusing every image later.

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

/// Limits on images normalised on upload (and on images from MCP tools and `/v1` requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImageLimits {
    /// Most pixels (width × height) accepted, checked from the header before decoding.
    pub max_pixels: u64,
    /// Longest side accepted, in pixels, checked from the header before decoding.
    pub max_side_px: u32,
    /// Long edge of a stored image: larger images are brought down to it.
    pub resize_to_px: u32,
    /// Most memory one decode may allocate, in MiB.
    pub decode_memory_mb: u64,
    /// Images decoded at once across the process: decoding is CPU work and must not starve
    /// the blocking pool that file and database work share.
    pub concurrent_decodes: u32,
}

impl Default for ImageLimits {
    /// 40 megapixels (a high-end phone photo, with room), 16,384 px a side, stored at
    /// 2048 px (what providers look at anyway: OpenAI scales to fit 2048), 256 MiB per
    /// decode, two decodes at once.
    fn default() -> Self {
        Self {
            max_pixels: 40_000_000,
            max_side_px: 16_384,
            resize_to_px: 2048,
            decode_memory_mb: 256,
            concurrent_decodes: 2,
        }
    }
}

impl ImageLimits {
    /// The first setting out of range (its key under `images.`), and why.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        let checks: [(&'static str, u64, u64, u64); 5] = [
            (
                "images.max_pixels",
                self.max_pixels,
                1_000_000,
                1_000_000_000,
            ),
            ("images.max_side_px", self.max_side_px.into(), 256, 65_535),
            ("images.resize_to_px", self.resize_to_px.into(), 256, 8192),
            ("images.decode_memory_mb", self.decode_memory_mb, 16, 16_384),
            (
                "images.concurrent_decodes",
                self.concurrent_decodes.into(),
                1,
                64,
            ),
        ];
        if let Some((key, _, least, most)) = checks
            .into_iter()
            .find(|(_, value, least, most)| value < least || value > most)
        {
            return Some((key, format!("must be between {least} and {most}")));
        }
        if self.resize_to_px > self.max_side_px {
            return Some((
                "images.resize_to_px",
                format!("must not exceed images.max_side_px ({})", self.max_side_px),
            ));
        }
        None
    }

    /// [`Self::decode_memory_mb`] in bytes.
    pub fn decode_memory_bytes(&self) -> u64 {
        self.decode_memory_mb.saturating_mul(1024 * 1024)
    }
}

/// The image decoders of one process: the limits, and the permits that keep at most
/// [`ImageLimits::concurrent_decodes`] decodes running ([`Self::normalise`]).
#[derive(Debug)]
pub struct ImageDecoders {
    pub(super) limits: ImageLimits,
    pub(super) permits: Semaphore,
}

impl ImageDecoders {
    pub fn new(limits: ImageLimits) -> Self {
        Self {
            limits,
            permits: Semaphore::new(limits.concurrent_decodes.max(1) as usize),
        }
    }

    /// The limits every decode runs under.
    pub fn limits(&self) -> &ImageLimits {
        &self.limits
    }
}

impl Default for ImageDecoders {
    fn default() -> Self {
        Self::new(ImageLimits::default())
    }
}

#[cfg(test)]
#[path = "image_limits_tests.rs"]
mod tests;
