//! Image parts of a `/v1/chat/completions` user message: `data:` URLs only (a link is never
//! fetched: the server would be a proxy to wherever a client points it), checked under the
//! rules an uploaded image meets — a model that reads images, its count and size limits,
//! dimensions read from the header and bounded.

use base64::Engine;

use super::error::OpenAiError;
use crate::catalogue::CatalogueModel;
use crate::files::image::{too_large, ImageLimits};
use crate::llm::ImagePart;

/// The images `urls` (the message's `image_url` parts, in order) carry, for `model`, each
/// within the upload's pixel `limits`.
pub fn images_of(
    urls: Vec<String>,
    model: &CatalogueModel,
    limits: &ImageLimits,
    param: &str,
    already: usize,
) -> Result<Vec<ImagePart>, OpenAiError> {
    if urls.is_empty() {
        return Ok(Vec::new());
    }
    let at = format!("{param}.content");
    if !model.takes_images() {
        return Err(OpenAiError::invalid(
            at,
            "model_cannot_see_images",
            format!("the model `{}` cannot see images", model.name),
        ));
    }
    if already + urls.len() > model.max_images as usize {
        return Err(OpenAiError::invalid(
            at,
            "too_many_images",
            format!(
                "the model `{}` takes at most {} images per request",
                model.name, model.max_images
            ),
        ));
    }
    urls.iter()
        .enumerate()
        .map(|(i, url)| image_of(url, model, limits, &format!("{at}[{i}].image_url.url")))
        .collect()
}

fn image_of(
    url: &str,
    model: &CatalogueModel,
    limits: &ImageLimits,
    param: &str,
) -> Result<ImagePart, OpenAiError> {
    let bad = |code: &str, message: String| OpenAiError::invalid(param, code, message);
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(bad(
            "invalid_image_url",
            "images must be sent inline as data: URLs (data:image/png;base64,...); links \
             are not fetched"
                .into(),
        ));
    };
    let Some((_, data)) = rest.split_once(";base64,") else {
        return Err(bad(
            "invalid_image_url",
            "a data: URL must be base64 (data:image/png;base64,...)".into(),
        ));
    };
    // Base64 is 4/3 of the bytes: refuse an oversized image before decoding it.
    if data.len() as u64 / 4 * 3 > model.max_image_bytes + 3 {
        return Err(bad(
            "image_too_large",
            format!(
                "an image may be at most {} bytes for the model `{}`",
                model.max_image_bytes, model.name
            ),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| bad("invalid_image", "the data: URL is not valid base64".into()))?;
    let image = ImagePart::read("", &bytes).ok_or_else(|| {
        bad(
            "invalid_image",
            "the image is not a readable PNG, JPEG, WebP or GIF".into(),
        )
    })?;
    if let Some(why) = too_large(image.width, image.height, limits) {
        return Err(bad("image_too_large", why));
    }
    Ok(image.for_provider(model.kind))
}
