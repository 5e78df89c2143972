//! An image given to the model with a message, and what it costs. The bytes were normalised
//! when they were stored ([`crate::files::image`]); here they only travel, base64-encoded, as
//! each provider's native part. The token estimate follows the provider's published rule so
//! the budget reservation holds for images as it does for text.

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::config::ProviderKind;

/// One image of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// Where it is in the user's workspace (named to models that cannot see it).
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/gif`.
    pub media_type: String,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
    pub width: u32,
    pub height: u32,
    /// Size of the image's bytes (before base64).
    pub bytes: u64,
    /// Input tokens it is estimated at for the provider it goes to ([`estimate`]).
    pub tokens: u64,
}

impl ImagePart {
    /// The image in `bytes` at `path`: `None` unless they are PNG, JPEG, WebP or GIF whose
    /// header gives the size (only the header is read; nothing is decoded).
    pub fn read(path: &str, bytes: &[u8]) -> Option<Self> {
        let format = image::guess_format(bytes).ok()?;
        let media_type = match format {
            image::ImageFormat::Png => "image/png",
            image::ImageFormat::Jpeg => "image/jpeg",
            image::ImageFormat::WebP => "image/webp",
            image::ImageFormat::Gif => "image/gif",
            _ => return None,
        };
        let reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
        let (width, height) = reader.into_dimensions().ok()?;
        Some(Self {
            path: path.to_owned(),
            media_type: media_type.to_owned(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            width,
            height,
            bytes: bytes.len() as u64,
            tokens: anthropic_tokens(width, height),
        })
    }

    /// The same image estimated for a model of `kind`.
    pub fn for_provider(mut self, kind: ProviderKind) -> Self {
        self.tokens = estimate(kind, self.width, self.height);
        self
    }

    /// A `data:` URL of it (OpenAI's `image_url`; never a link to this server).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

/// Whether a workspace path names an image a message may carry (by its extension).
pub fn is_image_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".webp", ".gif"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Input tokens of a `width` × `height` image for a model of `kind`.
pub fn estimate(kind: ProviderKind, width: u32, height: u32) -> u64 {
    match kind {
        ProviderKind::Openai => openai_tokens(width, height),
        _ => anthropic_tokens(width, height),
    }
}

/// OpenAI's rule at high detail: fit in 2048 × 2048, then bring the shortest side to 768
/// (never up), then 170 tokens per 512-px tile plus 85.
pub fn openai_tokens(width: u32, height: u32) -> u64 {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    (w, h) = ((w * short).round(), (h * short).round());
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    170 * tiles as u64 + 85
}

/// Anthropic's rule: images are brought to a long edge of 1568 px, then `w × h / 750`.
pub fn anthropic_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (1568.0 / w.max(h)).min(1.0);
    ((w * fit).round() * (h * fit).round() / 750.0).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_rules() {
        // OpenAI's worked examples: 1024 × 1024 is 765 tokens, 2048 × 4096 is 1105.
        assert_eq!(openai_tokens(1024, 1024), 765);
        assert_eq!(openai_tokens(2048, 4096), 1105);
        assert_eq!(openai_tokens(100, 100), 255);
        // Anthropic: 1000 × 1000 is about 1334; 1092 × 1092 is about 1590.
        assert_eq!(anthropic_tokens(1000, 1000), 1334);
        assert_eq!(anthropic_tokens(1092, 1092), 1590);
        assert_eq!(anthropic_tokens(3136, 1568), anthropic_tokens(1568, 784));
        assert!(is_image_path("a/B.JPG") && !is_image_path("notes.txt"));
    }
}
