//! Image uploads (issue 44): normalised once when stored — named format checked against the
//! bytes, dimensions refused before decoding, EXIF rotation applied, resized, re-encoded —
//! and refused with a clear 4xx when they are not images, are corrupt, or are bombs.

use agentchat_tests::*;
use image::{GenericImageView, ImageFormat};
use serde_json::json;

use crate::images::{make, put_file};

async fn download(app: &TestApp, token: &str, path: &str) -> image::DynamicImage {
    let r = app
        .get_as(token, &format!("/api/files/{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    image::load_from_memory(&r.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn images_are_normalised_once_when_uploaded() {
    let app = TestApp::builder().start().await;
    let u = app.signed_up("pic").await;

    // A big PNG comes down to a 2048-px long edge, still PNG.
    let big = make::solid(3000, 1000, [200, 10, 10], ImageFormat::Png);
    let size = big.len();
    let (status, answer) = put_file(&app, &u.access, "shots/wide.png", big).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["path"], "shots/wide.png");
    assert_eq!(
        answer["image"],
        json!({"mime": "image/png", "width": 2048, "height": 683,
               "original": {"width": 3000, "height": 1000, "bytes": size}})
    );
    assert_eq!(
        download(&app, &u.access, "shots/wide.png")
            .await
            .dimensions(),
        (2048, 683)
    );

    // A GIF gives its first frame, stored as PNG under a .png name.
    let gif = make::solid(30, 20, [0, 0, 250], ImageFormat::Gif);
    let (status, answer) = put_file(&app, &u.access, "anim.gif", gif).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        (answer["path"].as_str(), answer["image"]["mime"].as_str()),
        (Some("anim.png"), Some("image/png"))
    );
    assert_eq!(
        download(&app, &u.access, "anim.png").await.dimensions(),
        (30, 20)
    );

    // A photo tagged "rotate 90° clockwise" is stored upright: the left half on top.
    let photo = make::encode(
        make::halves(40, 20, [250, 0, 0], [0, 0, 250]),
        ImageFormat::Jpeg,
    );
    let rotated = make::with_exif_orientation(&photo, 6);
    let (status, answer) = put_file(&app, &u.access, "photo.jpg", rotated).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        (
            answer["image"]["width"].as_u64(),
            answer["image"]["height"].as_u64()
        ),
        (Some(20), Some(40))
    );
    assert_eq!(answer["image"]["mime"], "image/jpeg");
    let upright = download(&app, &u.access, "photo.jpg").await.to_rgb8();
    assert_eq!(upright.dimensions(), (20, 40));
    let (top, bottom) = (upright.get_pixel(10, 5), upright.get_pixel(10, 35));
    assert!(top[0] > 200 && top[2] < 60, "top {top:?}");
    assert!(bottom[2] > 200 && bottom[0] < 60, "bottom {bottom:?}");

    // Other files are stored as they came, with no image in the answer.
    let (status, answer) = put_file(&app, &u.access, "notes.txt", b"plain".to_vec()).await;
    assert_eq!(status, 201);
    assert!(answer.get("image").is_none(), "{answer}");
}

#[tokio::test]
async fn bad_images_are_refused_with_a_clear_error_and_nothing_stored() {
    let app = TestApp::builder().start().await;
    let u = app.signed_up("bad").await;
    let png = make::solid(64, 64, [1, 2, 3], ImageFormat::Png);
    let cases: [(&str, Vec<u8>, u16, &str); 6] = [
        (
            "truncated.png",
            png[..png.len() / 2].to_vec(),
            422,
            "invalid_image",
        ),
        (
            "bomb.png",
            make::png_header_bomb(40_000, 40_000),
            413,
            "image_too_large",
        ),
        ("bomb.gif", make::gif_bomb(), 413, "image_too_large"),
        (
            "evil.png",
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>".to_vec(),
            415,
            "unsupported_image",
        ),
        (
            "logo.svg",
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec(),
            415,
            "unsupported_image",
        ),
        ("really-png.jpg", png.clone(), 415, "unsupported_image"),
    ];
    for (path, bytes, status, code) in cases {
        let (got, answer) = put_file(&app, &u.access, path, bytes).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{path}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            !message.is_empty() && !message.contains("/tmp"),
            "{message}"
        );
    }
    let (_, answer) = put_file(
        &app,
        &u.access,
        "bomb.png",
        make::png_header_bomb(40_000, 40_000),
    )
    .await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 40 megapixels"),
        "{answer}"
    );
    let listing: serde_json::Value = app
        .get_as(&u.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listing["items"], json!([]), "{listing}");
}
