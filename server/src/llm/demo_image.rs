//! The demo model looks at images: for the images of the last user message it says, for
//! each, its size in pixels and its dominant colour (named and in hex), so that image input
//! can be tried offline and a test can check the answer is true of the image.

use base64::Engine;
use image::imageops::FilterType;

use super::ImagePart;

/// Named colours the dominant one is called by (the nearest).
const NAMES: [(&str, [u8; 3]); 12] = [
    ("black", [0, 0, 0]),
    ("white", [255, 255, 255]),
    ("grey", [128, 128, 128]),
    ("red", [220, 30, 30]),
    ("green", [30, 160, 50]),
    ("blue", [30, 60, 220]),
    ("yellow", [240, 220, 40]),
    ("orange", [245, 140, 20]),
    ("purple", [130, 50, 170]),
    ("pink", [245, 150, 190]),
    ("brown", [130, 80, 40]),
    ("cyan", [40, 200, 220]),
];

/// What the demo says about `images`.
pub(super) fn describe(images: &[ImagePart]) -> String {
    let lines: Vec<String> = images.iter().map(describe_one).collect();
    let head = match images.len() {
        1 => "I see one image.".to_owned(),
        n => format!("I see {n} images."),
    };
    format!("{head}\n{}", lines.join("\n"))
}

fn describe_one(image: &ImagePart) -> String {
    let name = match image.path.as_str() {
        "" => "The image".to_owned(),
        path => format!("`{path}`"),
    };
    let colour = dominant(image)
        .map(|rgb| {
            format!(
                ", mostly {} (#{:02x}{:02x}{:02x})",
                nearest_name(rgb),
                rgb[0],
                rgb[1],
                rgb[2]
            )
        })
        .unwrap_or_default();
    format!(
        "- {name}: {} × {} pixels{colour}.",
        image.width, image.height
    )
}

/// The most common colour (in 4-bit bins per channel, averaged within the bin) of a small
/// copy of the image; `None` when it does not decode.
fn dominant(image: &ImagePart) -> Option<[u8; 3]> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .ok()?;
    let img = image::load_from_memory(&bytes).ok()?;
    let small = img.resize(64, 64, FilterType::Nearest).to_rgba8();
    let mut bins = vec![(0u64, [0u64; 3]); 4096];
    for p in small.pixels().filter(|p| p[3] >= 128) {
        let i =
            (usize::from(p[0] >> 4) << 8) | (usize::from(p[1] >> 4) << 4) | usize::from(p[2] >> 4);
        bins[i].0 += 1;
        for c in 0..3 {
            bins[i].1[c] += u64::from(p[c]);
        }
    }
    let (n, sum) = bins.into_iter().max_by_key(|(n, _)| *n)?;
    (n > 0).then(|| sum.map(|s| u8::try_from(s / n).unwrap_or(u8::MAX)))
}

fn nearest_name(rgb: [u8; 3]) -> &'static str {
    let distance = |c: [u8; 3]| -> i64 {
        (0..3)
            .map(|i| (i64::from(rgb[i]) - i64::from(c[i])).pow(2))
            .sum()
    };
    NAMES
        .iter()
        .min_by_key(|(_, c)| distance(*c))
        .map_or("grey", |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_and_dominant_colour() {
        let mut img = image::RgbImage::from_pixel(40, 30, image::Rgb([20, 40, 230]));
        img.put_pixel(0, 0, image::Rgb([255, 255, 0]));
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        let part = ImagePart::read("sky.png", png.get_ref()).unwrap();
        assert_eq!(
            describe(&[part]),
            "I see one image.\n- `sky.png`: 40 × 30 pixels, mostly blue (#1428e6)."
        );
    }
}
