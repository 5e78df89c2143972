//! Hostile input: forged and altered access tokens. Every one is refused with 401 on a
//! user route and on an admin route, and the genuine token still works afterwards.

use agentchat_tests::*;
use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

const SECRET: &str = "hostile-jwt-secret-that-is-long-enough-0123456789";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn sign(secret: &str, alg: Algorithm, claims: &Value) -> String {
    encode(
        &Header::new(alg),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

/// A token with this header and claims and the genuine token's signature.
fn spliced(header: &Value, claims: &Value, sig: &str) -> String {
    format!(
        "{}.{}.{sig}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    )
}

/// At least 20 tokens an attacker could craft knowing the format but not the key.
fn forgeries(genuine: &str, me: uuid::Uuid, admin: uuid::Uuid) -> Vec<(String, String)> {
    let now = chrono::Utc::now().timestamp();
    let parts: Vec<&str> = genuine.split('.').collect();
    let (h, p, sig) = (parts[0], parts[1], parts[2]);
    let claims = |sub: uuid::Uuid, ver: i32| json!({"sub": sub, "ver": ver, "iss": "agentchat", "iat": now, "exp": now + 600});
    let good = claims(me, 0);
    let hs256 = json!({"alg": "HS256", "typ": "JWT"});
    let mut flipped_sig = sig.as_bytes().to_vec();
    flipped_sig[3] = if flipped_sig[3] == b'A' { b'B' } else { b'A' };
    let mut out: Vec<(String, String)> = vec![
        ("empty".into(), String::new()),
        ("two parts".into(), format!("{h}.{p}")),
        ("four parts".into(), format!("{genuine}.{sig}")),
        ("no signature".into(), format!("{h}.{p}.")),
        (
            "flipped signature".into(),
            format!("{h}.{p}.{}", String::from_utf8(flipped_sig).unwrap()),
        ),
        (
            "alg none".into(),
            spliced(&json!({"alg": "none"}), &good, ""),
        ),
        (
            "alg None".into(),
            spliced(&json!({"alg": "None", "typ": "JWT"}), &good, ""),
        ),
        (
            "alg NONE with sig".into(),
            spliced(&json!({"alg": "NONE"}), &good, sig),
        ),
        (
            "HS384 same key".into(),
            sign(SECRET, Algorithm::HS384, &good),
        ),
        (
            "HS512 same key".into(),
            sign(SECRET, Algorithm::HS512, &good),
        ),
        (
            "wrong key".into(),
            sign(
                "another-secret-that-is-long-enough-000000",
                Algorithm::HS256,
                &good,
            ),
        ),
        ("empty key".into(), sign("", Algorithm::HS256, &good)),
        (
            "sub swapped to admin".into(),
            spliced(&hs256, &claims(admin, 0), sig),
        ),
        ("ver bumped".into(), spliced(&hs256, &claims(me, 1), sig)),
        (
            "exp extended".into(),
            spliced(
                &hs256,
                &json!({"sub": me, "ver": 0, "iss": "agentchat", "iat": now, "exp": now + 86400 * 365}),
                sig,
            ),
        ),
        (
            "expired, right key".into(),
            sign(
                SECRET,
                Algorithm::HS256,
                &json!({"sub": me, "ver": 0, "iss": "agentchat", "iat": now - 7200, "exp": now - 3600}),
            ),
        ),
        (
            "wrong issuer, right key".into(),
            sign(
                SECRET,
                Algorithm::HS256,
                &json!({"sub": me, "ver": 0, "iss": "evil", "iat": now, "exp": now + 600}),
            ),
        ),
        (
            "no issuer, right key".into(),
            sign(
                SECRET,
                Algorithm::HS256,
                &json!({"sub": me, "ver": 0, "iat": now, "exp": now + 600}),
            ),
        ),
        (
            "no exp, right key".into(),
            sign(
                SECRET,
                Algorithm::HS256,
                &json!({"sub": me, "ver": 0, "iss": "agentchat", "iat": now}),
            ),
        ),
        (
            "unknown user, right key".into(),
            sign(SECRET, Algorithm::HS256, &claims(uuid::Uuid::new_v4(), 0)),
        ),
        (
            "old version, right key".into(),
            sign(SECRET, Algorithm::HS256, &claims(me, -1)),
        ),
        (
            "sub not a uuid, right key".into(),
            sign(
                SECRET,
                Algorithm::HS256,
                &json!({"sub": "admin", "ver": 0, "iss": "agentchat", "iat": now, "exp": now + 600}),
            ),
        ),
        (
            "kid injection".into(),
            spliced(
                &json!({"alg": "HS256", "kid": "../../../../dev/null"}),
                &good,
                sig,
            ),
        ),
        (
            "jku header".into(),
            spliced(
                &json!({"alg": "HS256", "jku": "http://127.0.0.1:1/jwks"}),
                &good,
                sig,
            ),
        ),
        (
            "RS256 header on HMAC sig".into(),
            spliced(&json!({"alg": "RS256"}), &good, sig),
        ),
        ("garbage base64".into(), "!!!.@@@.###".into()),
        (
            "json array claims".into(),
            format!("{h}.{}.{sig}", b64(b"[1,2,3]")),
        ),
        ("huge".into(), format!("{h}.{}.{sig}", "A".repeat(6000))),
        ("trailing garbage".into(), format!("{genuine}x")),
        ("nul inside".into(), format!("{h}\u{0}.{p}.{sig}")),
    ];
    // Every altered byte of the payload invalidates the signature.
    for i in [0, p.len() / 2, p.len() - 1] {
        let mut bytes = p.as_bytes().to_vec();
        bytes[i] = if bytes[i] == b'x' { b'y' } else { b'x' };
        out.push((
            format!("payload byte {i}"),
            format!("{h}.{}.{sig}", String::from_utf8(bytes).unwrap()),
        ));
    }
    out
}

#[tokio::test]
async fn forged_and_altered_access_tokens_are_refused() {
    let app = TestApp::builder()
        .settings(|s| s.auth.jwt_secret = Some(SECRET.to_owned().into()))
        .start()
        .await;
    let admin = app.signed_up("queen").await;
    let me = app.signed_up("pawn").await;
    let cases = forgeries(&me.access, me.user_id, admin.user_id);
    assert!(cases.len() >= 20, "{}", cases.len());
    for (what, token) in &cases {
        for path in ["/api/me", "/api/admin/users", "/api/conversations"] {
            let r = app
                .client
                .get(app.url(path))
                .header("authorization", format!("Bearer {token}"))
                .send()
                .await;
            // A header value reqwest refuses to send (NUL) cannot reach the server either.
            let Ok(r) = r else { continue };
            assert_eq!(r.status(), 401, "{what} on {path}");
            let body = r.text().await.unwrap();
            assert!(!body.contains(SECRET), "{what}: {body}");
        }
    }
    // Cookie- and query-borne tokens are not accepted either.
    let r = app
        .client
        .get(app.url(&format!("/api/me?access_token={}", me.access)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = app.get_as(&me.access, "/api/me").send().await.unwrap();
    assert_eq!(r.status(), 200);
}
