use super::*;

#[test]
fn the_defaults_are_valid_and_zero_or_absurd_values_name_their_key() {
    assert_eq!(ImageLimits::default().invalid(), None);
    let with = |f: fn(&mut ImageLimits)| {
        let mut l = ImageLimits::default();
        f(&mut l);
        l.invalid()
    };
    let key = |f| with(f).map(|(k, _)| k);
    assert_eq!(key(|l| l.max_pixels = 0), Some("images.max_pixels"));
    assert_eq!(key(|l| l.max_side_px = 0), Some("images.max_side_px"));
    assert_eq!(key(|l| l.resize_to_px = 0), Some("images.resize_to_px"));
    assert_eq!(
        key(|l| l.resize_to_px = 100_000),
        Some("images.resize_to_px")
    );
    assert_eq!(
        key(|l| l.decode_memory_mb = 0),
        Some("images.decode_memory_mb")
    );
    assert_eq!(
        key(|l| l.concurrent_decodes = 0),
        Some("images.concurrent_decodes")
    );
    assert_eq!(
        key(|l| l.concurrent_decodes = 10_000),
        Some("images.concurrent_decodes")
    );
    let (k, why) = with(|l| {
        l.max_side_px = 1024;
        l.resize_to_px = 2048;
    })
    .unwrap();
    assert_eq!(k, "images.resize_to_px");
    assert!(why.contains("max_side_px"), "{why}");
    assert_eq!(
        with(|l| l.resize_to_px = 8192),
        None,
        "the upper bound is accepted"
    );
    assert_eq!(
        with(|l| l.resize_to_px = 256).map(|(_, w)| w),
        None,
        "the lower bound is accepted"
    );
    assert_eq!(
        with(|l| l.resize_to_px = 255).map(|(_, w)| w).as_deref(),
        Some("must be between 256 and 8192")
    );
}
