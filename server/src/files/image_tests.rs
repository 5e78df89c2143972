use super::*;

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([200, 30, 30]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(img)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

#[test]
fn a_large_png_is_brought_down_to_the_long_edge() {
    let n = normalise_now(&png(3000, 1500), ImageFormat::Png, &ImageLimits::default()).unwrap();
    assert_eq!((n.info.width, n.info.height), (2048, 1024));
    assert_eq!(
        (n.info.original.width, n.info.original.height),
        (3000, 1500)
    );
    assert_eq!((n.info.mime, n.extension), ("image/png", "png"));
    assert_eq!(image::guess_format(&n.bytes).unwrap(), ImageFormat::Png);
}

#[test]
fn names_claims_and_stored_paths() {
    assert!(matches!(claimed("a/b.JPG"), Some(Ok(ImageFormat::Jpeg))));
    assert!(matches!(
        claimed("x.svg"),
        Some(Err(ImageError::Unsupported(_)))
    ));
    assert!(claimed("notes.txt").is_none());
    assert!(claimed("README").is_none());
    assert_eq!(
        stored_path("c/chart.gif", ImageFormat::Gif, "png"),
        "c/chart.png"
    );
    assert_eq!(stored_path("p.jpeg", ImageFormat::Jpeg, "jpg"), "p.jpeg");
    assert_eq!(stored_path("p.webp", ImageFormat::WebP, "jpg"), "p.jpg");
    assert!(matches!(
        normalise_now(
            b"<svg xmlns='http://www.w3.org/2000/svg'/>",
            ImageFormat::Png,
            &ImageLimits::default()
        ),
        Err(ImageError::Unsupported(_))
    ));
}

#[test]
fn the_configured_limits_are_the_ones_applied() {
    let limits = ImageLimits {
        max_pixels: 1_500_000,
        resize_to_px: 512,
        ..ImageLimits::default()
    };
    let n = normalise_now(&png(1200, 800), ImageFormat::Png, &limits).unwrap();
    assert_eq!((n.info.width, n.info.height), (512, 341));
    match normalise_now(&png(1500, 1100), ImageFormat::Png, &limits) {
        Err(ImageError::TooLarge(why)) => {
            assert!(
                why.contains("1500 × 1100") && why.contains("1500000 pixels"),
                "{why}"
            )
        }
        other => panic!("expected TooLarge, got {:?}", other.map(|n| n.info)),
    }
    assert_eq!(too_large(1000, 1000, &ImageLimits::default()), None);
    assert!(too_large(16_385, 10, &ImageLimits::default()).is_some());
}
