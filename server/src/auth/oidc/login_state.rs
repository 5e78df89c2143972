//! The secrets of one sign-in attempt (`state`, `nonce`, the PKCE verifier) travel in a
//! signed, short-lived, HttpOnly cookie: bound to the browser that started the sign-in,
//! valid on any replica, and nothing to store or clean up on the server.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use ring::hmac;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The cookie's name; it is scoped to `/api/auth/oidc`.
pub const COOKIE: &str = "agentchat_oidc";
/// How long a sign-in at the provider may take.
pub const LIFETIME_SECS: i64 = 600;
/// Longest cookie value looked at.
const MAX_COOKIE_BYTES: usize = 2048;

/// What the callback needs to finish the sign-in it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginState {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// Unix seconds.
    pub expires_at: i64,
}

/// Signs and checks [`LoginState`] cookies (HMAC-SHA256).
pub struct StateSigner {
    key: hmac::Key,
}

impl StateSigner {
    /// A key derived from the server's signing secret, so that every replica accepts the
    /// cookie and no other use of the secret can produce one.
    pub fn new(server_secret: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(b"agentchat oidc login state v1\0");
        h.update(server_secret);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, &h.finalize()),
        }
    }

    /// The cookie value: `payload.tag`, both URL-safe base64.
    pub fn seal(&self, s: &LoginState) -> String {
        let payload = B64.encode(serde_json::to_vec(s).unwrap_or_default());
        let tag = hmac::sign(&self.key, payload.as_bytes());
        format!("{payload}.{}", B64.encode(tag.as_ref()))
    }

    /// The state in a cookie this server signed that has not expired at `now`.
    pub fn open(&self, cookie: &str, now: i64) -> Option<LoginState> {
        if cookie.len() > MAX_COOKIE_BYTES {
            return None;
        }
        let (payload, tag) = cookie.split_once('.')?;
        let tag = B64.decode(tag).ok()?;
        hmac::verify(&self.key, payload.as_bytes(), &tag).ok()?;
        let state: LoginState = serde_json::from_slice(&B64.decode(payload).ok()?).ok()?;
        (now < state.expires_at).then_some(state)
    }
}

/// Compares two strings through their digests without an early exit.
pub fn same(a: &str, b: &str) -> bool {
    digests_equal(
        &Sha256::digest(a.as_bytes()).into(),
        &Sha256::digest(b.as_bytes()).into(),
    )
}

/// Byte-by-byte comparison of two digests that always looks at every byte.
pub fn digests_equal(x: &[u8; 32], y: &[u8; 32]) -> bool {
    x.iter()
        .zip(y.iter())
        .fold(0u8, |acc, (p, q)| acc | (p ^ q))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(expires_at: i64) -> LoginState {
        LoginState {
            state: "s".into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            expires_at,
        }
    }

    #[test]
    fn round_trip_and_expiry() {
        let signer = StateSigner::new(b"secret");
        let sealed = signer.seal(&sample(100));
        assert_eq!(signer.open(&sealed, 99), Some(sample(100)));
        assert_eq!(signer.open(&sealed, 100), None);
    }

    #[test]
    fn tampering_and_other_keys_are_refused() {
        let signer = StateSigner::new(b"secret");
        let sealed = signer.seal(&sample(100));
        let (payload, tag) = sealed.split_once('.').unwrap();
        let forged = B64.encode(serde_json::to_vec(&sample(1_000)).unwrap());
        assert_eq!(signer.open(&format!("{forged}.{tag}"), 1), None);
        assert_eq!(signer.open(&format!("{payload}.AAAA"), 1), None);
        assert_eq!(StateSigner::new(b"other").open(&sealed, 1), None);
        assert_eq!(signer.open("garbage", 1), None);
    }

    #[test]
    fn same_compares_content() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", ""));
    }
}
