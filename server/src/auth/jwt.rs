//! Short-lived access tokens: HS256 only, `exp` checked with no leeway, and a per-user
//! token version that lets the server invalidate tokens before they expire.

use std::time::Duration;

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

const ISSUER: &str = "agentchat";

/// What an access token says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: Uuid,
    /// The user's token version when the token was issued.
    pub ver: i32,
    pub iss: String,
    pub iat: i64,
    pub exp: i64,
    /// When the session's sign-in happened (password or single sign-on; refreshes carry it
    /// on), in Unix seconds: what "signed in recently" is judged by. 0 in tokens from
    /// before it existed, which are never recent.
    #[serde(default)]
    pub auth_time: i64,
}

/// Signing and verification keys with a pinned algorithm.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl: Duration,
}

impl JwtKeys {
    pub fn new(secret: &[u8], ttl: Duration) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_exp = true;
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "sub", "iss"]);
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl,
        }
    }

    /// Lifetime of an access token in seconds.
    pub fn ttl_secs(&self) -> u64 {
        self.ttl.as_secs()
    }

    /// Signs a token for `user_id` at `token_version`, of a session signed in at
    /// `signed_in_at`.
    pub fn issue(
        &self,
        user_id: Uuid,
        token_version: i32,
        signed_in_at: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user_id,
            ver: token_version,
            iss: ISSUER.to_owned(),
            iat: now,
            exp: now + i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX / 2),
            auth_time: signed_in_at.timestamp(),
        };
        Ok(encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// Verifies signature, algorithm, issuer and expiry.
    pub fn verify(&self, token: &str) -> Result<Claims, jsonwebtoken::errors::Error> {
        decode::<Claims>(token, &self.decoding, &self.validation).map(|d| d.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn keys() -> JwtKeys {
        JwtKeys::new(&[7u8; 32], Duration::from_secs(60))
    }

    #[test]
    fn round_trip() -> anyhow::Result<()> {
        let k = keys();
        let id = Uuid::new_v4();
        let signed_in = chrono::Utc::now() - chrono::Duration::minutes(5);
        let c = k.verify(&k.issue(id, 3, signed_in)?)?;
        assert_eq!(
            c.auth_time,
            signed_in.timestamp(),
            "the sign-in time is carried"
        );
        assert_eq!((c.sub, c.ver), (id, 3));
        Ok(())
    }

    #[test]
    fn alg_none_is_rejected() {
        let k = keys();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = b64.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let body = b64.encode(format!(
            r#"{{"sub":"{}","ver":0,"iss":"agentchat","iat":0,"exp":{}}}"#,
            Uuid::new_v4(),
            chrono::Utc::now().timestamp() + 600
        ));
        assert!(k.verify(&format!("{header}.{body}.")).is_err());
    }

    #[test]
    fn other_key_is_rejected() -> anyhow::Result<()> {
        let other = JwtKeys::new(&[8u8; 32], Duration::from_secs(60));
        let token = other.issue(Uuid::new_v4(), 0, chrono::Utc::now())?;
        assert!(keys().verify(&token).is_err());
        Ok(())
    }

    #[test]
    fn expired_is_rejected_without_leeway() {
        let k = keys();
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: Uuid::new_v4(),
            ver: 0,
            iss: ISSUER.into(),
            iat: now - 10,
            exp: now - 1,
            auth_time: now - 10,
        };
        let t = encode(&Header::new(Algorithm::HS256), &claims, &k.encoding).unwrap();
        assert!(k.verify(&t).is_err());
    }
}
