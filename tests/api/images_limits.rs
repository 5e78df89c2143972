//! The image limits are settings (`[images]`): a server told to store a smaller long edge
//! stores it, one told to take fewer pixels refuses an image it would otherwise take — on
//! upload and in `/v1/chat/completions` image parts alike.

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use image::{GenericImageView, ImageFormat};
use serde_json::{json, Value};

use crate::images::{b64, make, put_file, seeing_catalogue};

#[tokio::test]
async fn a_smaller_resize_to_px_is_the_long_edge_stored() {
    let app = TestApp::builder()
        .settings(|s| s.images.resize_to_px = 512)
        .start()
        .await;
    let u = app.signed_up("small").await;
    let png = make::solid(1200, 800, [10, 120, 200], ImageFormat::Png);
    let (status, answer) = put_file(&app, &u.access, "wide.png", png).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        (&answer["image"]["width"], &answer["image"]["height"]),
        (&json!(512), &json!(341)),
        "{answer}"
    );
    assert_eq!(answer["image"]["original"]["width"], 1200, "{answer}");
    let r = app
        .get_as(&u.access, "/api/files/wide.png")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let stored = image::load_from_memory(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(stored.dimensions(), (512, 341));

    // An image already under the edge is stored at its size.
    let small = make::solid(400, 300, [10, 120, 200], ImageFormat::Png);
    let (status, answer) = put_file(&app, &u.access, "small.png", small).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["image"]["width"], 400, "{answer}");
}

#[tokio::test]
async fn a_lower_max_pixels_refuses_a_moderate_image_on_upload_and_in_v1() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        agentchat_tests::fake_upstream::Reply::text("seen").into(),
    ));
    let catalogue = seeing_catalogue(&fake);
    let app = TestApp::builder()
        .settings(move |s| {
            catalogue(s);
            s.images.max_pixels = 1_000_000;
        })
        .start()
        .await;
    let u = app.signed_up("few").await;

    // 1200 × 900 is 1.08 megapixels: refused before decoding, nothing stored.
    let moderate = make::solid(1200, 900, [200, 200, 10], ImageFormat::Png);
    let (status, answer) = put_file(&app, &u.access, "moderate.png", moderate.clone()).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (413, Some("image_too_large")),
        "{answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1200 × 900") && message.contains("at most 1 megapixel and"),
        "{message}"
    );
    // At the limit exactly it is taken.
    let square = make::solid(1000, 1000, [200, 200, 10], ImageFormat::Png);
    let (status, answer) = put_file(&app, &u.access, "square.png", square).await;
    assert_eq!(status, 201, "{answer}");
    let listing: Value = app
        .get_as(&u.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths: Vec<&str> = listing["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(paths, ["square.png"], "{listing}");

    // The same image as a `/v1` data: URL meets the same limit, before the model is asked.
    let url = format!("data:image/png;base64,{}", b64(&moderate));
    let r = app
        .post_as(&u.access, "/v1/chat/completions")
        .json(
            &json!({"model": "eyes", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what colour?"},
                {"type": "image_url", "image_url": {"url": url}},
            ]}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "image_too_large", "{body}");
    assert_eq!(
        fake.request_count(),
        0,
        "a refused request reached the model"
    );
}
