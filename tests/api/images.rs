//! Images as model input (issue 44, DESIGN §16): the catalogue says which models read them
//! and within which limits, and every listing shows it.

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use serde_json::{json, Value};

/// Providers on the fake (OpenAI and Anthropic) and three models: one that reads images
/// with tight limits, one that reads text only (the default), one Anthropic model with images.
pub(crate) fn seeing_catalogue(
    fake: &FakeUpstream,
) -> impl Fn(&mut agentchat::config::Settings) + Clone {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(), "max_retries": 0},
        {"name": "an", "kind": "anthropic", "base_url": fake.base_url_anthropic(), "max_retries": 0},
    ]);
    let models = json!([
        {"name": "eyes", "provider": "oa", "upstream_model": "gpt-4o", "input": ["text", "image"],
         "max_images": 2, "max_image_bytes": 1048576},
        {"name": "blind", "provider": "oa", "upstream_model": "gpt-text"},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5", "input": ["text", "image"]},
    ]);
    move |s| {
        s.providers = serde_json::from_value(providers.clone()).unwrap();
        s.models = serde_json::from_value(models.clone()).unwrap();
        s.llm.model = "eyes".into();
    }
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    let r = app.get_as(token, path).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

/// `(input, max_image_bytes, max_images)` of the entry named `name` in `list`.
fn limits(list: &Value, key: &str, name: &str) -> (Value, Value, Value) {
    let m = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m[key] == name)
        .unwrap_or_else(|| panic!("{name} not in {list}"));
    (
        m["input"].clone(),
        m["max_image_bytes"].clone(),
        m["max_images"].clone(),
    )
}

#[tokio::test]
async fn every_listing_says_which_models_read_images_and_within_which_limits() {
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("uma").await;
    let eyes = (json!(["text", "image"]), json!(1048576), json!(2));
    let blind = (json!(["text"]), json!(5242880), json!(20));

    let mine = get(&app, &user.access, "/api/models").await;
    assert_eq!(limits(&mine["details"], "name", "eyes"), eyes);
    assert_eq!(limits(&mine["details"], "name", "blind"), blind);
    let v1 = get(&app, &user.access, "/v1/models").await;
    assert_eq!(limits(&v1["data"], "id", "eyes"), eyes);
    assert_eq!(limits(&v1["data"], "id", "blind"), blind);
    let all = get(&app, &admin.access, "/api/admin/models").await;
    assert_eq!(
        limits(&all["models"], "name", "claude").0,
        json!(["text", "image"])
    );

    // An admin adds a model that reads images; a bad limit is refused clearly.
    let add = |body: Value| {
        app.post_as(&admin.access, "/api/admin/models")
            .json(&body)
            .send()
    };
    let r =
        add(json!({"name": "seer", "provider": "oa", "input": ["text", "image"], "max_images": 3}))
            .await
            .unwrap();
    assert_eq!(r.status(), 201);
    let added: Value = r.json().await.unwrap();
    assert_eq!(
        (added["input"].clone(), added["max_images"].clone()),
        (json!(["text", "image"]), json!(3))
    );
    let r = add(json!({"name": "none", "provider": "oa", "max_images": 0}))
        .await
        .unwrap();
    expect_error(r, 400, "invalid_model").await;
    let r = add(json!({"name": "mute", "provider": "oa", "input": ["image"]}))
        .await
        .unwrap();
    expect_error(r, 400, "invalid_model").await;
    let mine = get(&app, &user.access, "/api/models").await;
    assert_eq!(limits(&mine["details"], "name", "seer").2, json!(3));
}

#[tokio::test]
async fn the_demo_model_reads_images() {
    let app = TestApp::builder().start().await;
    let user = app.signed_up("dee").await;
    let mine = get(&app, &user.access, "/api/models").await;
    assert_eq!(
        mine["details"][0]["input"],
        json!(["text", "image"]),
        "{mine}"
    );
}

/// Test images, made here (no binary fixtures).
pub(crate) mod make {
    use std::io::Cursor;

    use image::{DynamicImage, ImageFormat, Rgb, RgbImage};

    /// `w` × `h` of one colour, encoded as `format`.
    pub fn solid(w: u32, h: u32, rgb: [u8; 3], format: ImageFormat) -> Vec<u8> {
        encode(
            DynamicImage::ImageRgb8(RgbImage::from_pixel(w, h, Rgb(rgb))),
            format,
        )
    }

    pub fn encode(img: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    /// A PNG chunk with its CRC.
    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
        out
    }

    /// A well-formed PNG header claiming `w` × `h` RGB pixels, with a token of data: a few
    /// hundred bytes that would decode to gigabytes.
    pub fn png_header_bomb(w: u32, h: u32) -> Vec<u8> {
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        out.extend(chunk(b"IHDR", &ihdr));
        out.extend(chunk(
            b"IDAT",
            &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
        ));
        out.extend(chunk(b"IEND", &[]));
        out
    }

    /// A 1 × 1 GIF whose logical screen claims 65535 × 65535.
    pub fn gif_bomb() -> Vec<u8> {
        let mut gif = solid(1, 1, [1, 2, 3], ImageFormat::Gif);
        gif[6..10].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        gif
    }

    /// `jpeg` with an EXIF block saying it displays rotated by `orientation` (6: 90° clockwise).
    pub fn with_exif_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
        let mut tiff = b"MM\x00\x2a\x00\x00\x00\x08".to_vec();
        tiff.extend_from_slice(&1u16.to_be_bytes());
        tiff.extend_from_slice(&0x0112u16.to_be_bytes());
        tiff.extend_from_slice(&3u16.to_be_bytes());
        tiff.extend_from_slice(&1u32.to_be_bytes());
        tiff.extend_from_slice(&orientation.to_be_bytes());
        tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        let mut payload = b"Exif\x00\x00".to_vec();
        payload.extend(tiff);
        let mut out = jpeg[..2].to_vec();
        out.extend_from_slice(&[0xff, 0xe1]);
        out.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
        out.extend(payload);
        out.extend_from_slice(&jpeg[2..]);
        out
    }

    /// Left half `left`, right half `right`.
    pub fn halves(w: u32, h: u32, left: [u8; 3], right: [u8; 3]) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, _| {
            Rgb(if x < w / 2 { left } else { right })
        }))
    }
}

/// Puts `bytes` at `path`; the status and the answer.
pub(crate) async fn put_file(
    app: &TestApp,
    token: &str,
    path: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let r = app
        .client
        .put(app.url(&format!("/api/files/{path}")))
        .bearer_auth(token)
        .body(bytes)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Uploads a `w` × `h` PNG at `path`; its stored bytes.
pub(crate) async fn upload_png(app: &TestApp, token: &str, path: &str, w: u32, h: u32) -> Vec<u8> {
    let png = make::solid(w, h, [20, 160, 40], image::ImageFormat::Png);
    let (status, answer) = put_file(app, token, path, png).await;
    assert_eq!(status, 201, "{answer}");
    let r = app
        .get_as(token, &format!("/api/files/{path}"))
        .send()
        .await
        .unwrap();
    r.bytes().await.unwrap().to_vec()
}

pub(crate) fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) async fn send_with(
    app: &TestApp,
    token: &str,
    conv: &str,
    content: &str,
    files: &[&str],
) -> reqwest::Response {
    app.post_as(token, &format!("/api/conversations/{conv}/messages"))
        .json(&json!({"content": content, "attachments": files}))
        .send()
        .await
        .unwrap()
}

/// The last user message of the `n`th model request.
pub(crate) fn last_user(fake: &FakeUpstream, n: usize) -> Value {
    let body = &fake.requests()[n]["body"];
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

pub(crate) const NOTE: &str = "Attached files in your workspace (read them with your file tools):";

#[tokio::test]
async fn an_attached_image_goes_to_each_provider_as_its_native_part() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        agentchat_tests::fake_upstream::Reply::text("a green square").into(),
    ));
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("seer").await;
    let stored = upload_png(&app, &u.access, "pics/sq.png", 64, 32).await;
    let note = format!(
        "What is this?\n\n{NOTE}\n- pics/sq.png ({} bytes)",
        stored.len()
    );

    // OpenAI: the text, then an image_url part with a data: URL of the stored bytes.
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    let r = send_with(&app, &u.access, &conv, "What is this?", &["pics/sq.png"]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let _ = r.text().await;
    assert_eq!(
        last_user(&fake, 0)["content"],
        json!([
            {"type": "text", "text": note},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&stored))}},
        ])
    );

    // Anthropic: a base64 image block, then the text.
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "claude"}))
        .await;
    let r = send_with(&app, &u.access, &conv, "What is this?", &["pics/sq.png"]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let _ = r.text().await;
    assert_eq!(
        last_user(&fake, 1)["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&stored)}},
            {"type": "text", "text": note},
        ])
    );
}

#[tokio::test]
async fn images_a_model_cannot_take_are_refused_before_anything_is_spent() {
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("blinded").await;
    for name in ["a.png", "b.png", "c.png"] {
        upload_png(&app, &u.access, name, 8, 8).await;
    }
    let conv = app
        .create_conversation_with(&u.access, json!({"model": "blind"}))
        .await;
    let r = send_with(&app, &u.access, &conv, "see?", &["a.png"]).await;
    let body = expect_error(r, 422, "model_cannot_see_images").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`blind`"),
        "{body}"
    );
    // Three images to a model that takes two.
    let conv2 = app
        .create_conversation_with(&u.access, json!({"model": "eyes"}))
        .await;
    let r = send_with(
        &app,
        &u.access,
        &conv2,
        "see?",
        &["a.png", "b.png", "c.png"],
    )
    .await;
    expect_error(r, 422, "too_many_images").await;

    // Nothing reached the model, nothing was held, no message was stored.
    assert_eq!(fake.request_count(), 0);
    let totals = app.budget_totals(u.user_id).await;
    assert_eq!((totals.holds, totals.reserved, totals.ledger), (0, 0, 0));
    for c in [&conv, &conv2] {
        assert_eq!(app.conversation(&u.access, c).await["messages"], json!([]));
    }
    // Text alone still goes to the text model.
    fake.push(agentchat_tests::fake_upstream::Reply::text("words only"));
    let r = send_with(&app, &u.access, &conv, "just text", &[]).await;
    assert_eq!(r.status(), 200);
    let _ = r.text().await;
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn an_image_is_counted_by_the_providers_rule_where_no_usage_is_reported() {
    let fake = FakeUpstream::start().await;
    // No usage in the answers: the turn is charged our own count of its input.
    fake.set_default(Some(
        agentchat_tests::fake_upstream::Reply::text("ok").into(),
    ));
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("counted").await;
    // 1100 × 600: 3 × 2 tiles of 512 px at high detail, 6 × 170 + 85 = 1105 tokens.
    let stored = upload_png(&app, &u.access, "pic.png", 1100, 600).await;
    app.upload(&u.access, "pic.txt", &"x".repeat(stored.len()))
        .await;
    let mut charged = Vec::new();
    for file in ["pic.txt", "pic.png"] {
        let before = app.budget_totals(u.user_id).await.ledger;
        let conv = app
            .create_conversation_with(&u.access, json!({"model": "eyes"}))
            .await;
        let r = send_with(&app, &u.access, &conv, "describe", &[file]).await;
        assert_eq!(r.status(), 200);
        let _ = r.text().await;
        charged.push(app.budget_totals(u.user_id).await.ledger - before);
    }
    assert_eq!(charged[1] - charged[0], 1105, "{charged:?}");
}

#[tokio::test]
async fn the_demo_model_tells_an_images_size_and_dominant_colour() {
    let app = TestApp::builder().start().await;
    let u = app.signed_up("looker").await;
    let mut img = image::RgbImage::from_pixel(300, 120, image::Rgb([230, 30, 30]));
    for x in 0..40 {
        img.put_pixel(x, 0, image::Rgb([0, 0, 0]));
    }
    let png = make::encode(image::DynamicImage::ImageRgb8(img), image::ImageFormat::Png);
    let (status, _) = put_file(&app, &u.access, "red.png", png).await;
    assert_eq!(status, 201);
    let conv = app.new_conversation(&u.access).await;
    let r = send_with(&app, &u.access, &conv, "what is this?", &["red.png"]).await;
    assert_eq!(r.status(), 200);
    let text = streamed_text(&parse_sse(&r.text().await.unwrap()));
    assert_eq!(
        text,
        "[demo] I see one image.\n- `red.png`: 300 × 120 pixels, mostly red (#e61e1e)."
    );
}

#[tokio::test]
async fn v1_takes_image_parts_as_data_urls_and_never_fetches_links() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        agentchat_tests::fake_upstream::Reply::text("seen").into(),
    ));
    let app = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start()
        .await;
    let u = app.signed_up("client").await;
    let png = make::solid(16, 16, [0, 0, 200], image::ImageFormat::Png);
    let url = format!("data:image/png;base64,{}", b64(&png));
    let ask = |model: &str, url: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what colour?"},
            {"type": "image_url", "image_url": {"url": url}},
        ]}]})
    };
    let post = |body: Value| {
        app.post_as(&u.access, "/v1/chat/completions")
            .json(&body)
            .send()
    };
    let r = post(ask("eyes", &url)).await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(
        last_user(&fake, 0)["content"],
        json!([{"type": "text", "text": "what colour?"}, {"type": "image_url", "image_url": {"url": url}}])
    );
    let refused = [
        ("eyes", "https://example.com/cat.png", "invalid_image_url"),
        ("blind", url.as_str(), "model_cannot_see_images"),
        ("eyes", "data:image/png;base64,AAAA", "invalid_image"),
    ];
    for (model, url, code) in refused {
        let r = post(ask(model, url)).await.unwrap();
        assert_eq!(r.status(), 400, "{model} {url}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
    }
    assert_eq!(
        fake.request_count(),
        1,
        "a refused request reached the model"
    );
}
