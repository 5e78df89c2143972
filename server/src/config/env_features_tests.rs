use super::super::Settings;

fn load(vars: &[(&str, &str)]) -> Result<Settings, super::super::ConfigError> {
    Settings::load_from(None, |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

#[test]
fn image_limits_come_from_the_environment_and_absurd_ones_stop_the_start() {
    let s = load(&[
        ("AGENTCHAT_IMAGE_RESIZE_TO_PX", "512"),
        ("AGENTCHAT_IMAGE_MAX_PIXELS", "1000000"),
        ("AGENTCHAT_IMAGE_CONCURRENT_DECODES", "4"),
    ])
    .unwrap();
    assert_eq!(
        (
            s.images.resize_to_px,
            s.images.max_pixels,
            s.images.concurrent_decodes
        ),
        (512, 1_000_000, 4)
    );
    assert_eq!(s.images.max_side_px, 16_384);
    for (var, value, key) in [
        ("AGENTCHAT_IMAGE_RESIZE_TO_PX", "100", "images.resize_to_px"),
        ("AGENTCHAT_IMAGE_MAX_PIXELS", "0", "images.max_pixels"),
        (
            "AGENTCHAT_IMAGE_DECODE_MEMORY_MB",
            "0",
            "images.decode_memory_mb",
        ),
        (
            "AGENTCHAT_IMAGE_CONCURRENT_DECODES",
            "0",
            "images.concurrent_decodes",
        ),
    ] {
        let bad = load(&[(var, value)]).unwrap_err().to_string();
        assert!(
            bad.contains(&format!("`{key}`")) && bad.contains(var),
            "{var}={value}: {bad}"
        );
    }
}
