//! Per-user identity for MCP servers: a short-lived EdDSA (Ed25519) JWT naming the user and
//! their role, with the server's name as audience, so an MCP server can authorise per user
//! without trusting a header anyone could forge. The public key is served as a JWKS at
//! `GET /.well-known/jwks.json`; the private key is generated at first start and kept in the
//! database (like the access-token secret), so every replica signs with the same key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::Digest as _;

use crate::db;
use crate::tools::{ToolContext, ToolError};

/// Lifetime of one token (the contract allows at most 60 s).
pub const TOKEN_TTL_SECS: i64 = 60;
/// `iss` of every token.
pub const ISSUER: &str = "agentchat";
/// Name of the stored private key (PKCS#8).
pub const SECRET_NAME: &str = "mcp_identity_ed25519_pkcs8";

/// Signs identity tokens; cheap to clone.
#[derive(Clone)]
pub struct IdentitySigner {
    key: std::sync::Arc<EncodingKey>,
    kid: String,
    jwks: Value,
}

impl std::fmt::Debug for IdentitySigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentitySigner")
            .field("kid", &self.kid)
            .finish()
    }
}

/// The claims of an identity token.
#[derive(Debug, Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: String,
    preferred_username: &'a str,
    role: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
    jti: String,
}

impl IdentitySigner {
    /// A fresh PKCS#8 document for a new key.
    pub fn generate_pkcs8() -> Result<Vec<u8>, String> {
        let rng = ring::rand::SystemRandom::new();
        Ed25519KeyPair::generate_pkcs8(&rng)
            .map(|d| d.as_ref().to_vec())
            .map_err(|_| "could not generate an Ed25519 key".to_owned())
    }

    /// A signer from a stored PKCS#8 Ed25519 key.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        let pair = Ed25519KeyPair::from_pkcs8(der)
            .map_err(|_| "the stored MCP identity key is not an Ed25519 PKCS#8 key".to_owned())?;
        let public = pair.public_key().as_ref();
        let x = URL_SAFE_NO_PAD.encode(public);
        // RFC 7638 thumbprint: a stable key id derived from the public key alone.
        let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
        let kid = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()));
        let jwks = json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA",
        }]});
        Ok(Self {
            key: std::sync::Arc::new(EncodingKey::from_ed_der(der)),
            kid,
            jwks,
        })
    }

    /// The public keys, as served at `/.well-known/jwks.json`.
    pub fn jwks(&self) -> &Value {
        &self.jwks
    }

    /// A token for `user` (id, login name, role) to show the MCP server `audience`.
    pub fn sign(
        &self,
        user_id: uuid::Uuid,
        username: &str,
        role: &str,
        audience: &str,
    ) -> Result<String, String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            iss: ISSUER,
            sub: user_id.to_string(),
            preferred_username: username,
            role,
            aud: audience,
            iat: now,
            exp: now + TOKEN_TTL_SECS,
            jti: uuid::Uuid::new_v4().to_string(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        encode(&header, &claims, &self.key).map_err(|e| format!("signing the identity token: {e}"))
    }
}

/// What identity forwarding needs: the signing key and the database for the user's role.
pub struct IdentityContext {
    pub signer: IdentitySigner,
    pub pool: db::Pool,
}

impl IdentityContext {
    /// A fresh token for the calling user (their role as it is now).
    pub async fn token_for(&self, ctx: &ToolContext, audience: &str) -> Result<String, ToolError> {
        let unavailable = |_| ToolError::Failed("could not look up the caller's role".to_owned());
        let mut conn = db::conn(&self.pool)
            .await
            .map_err(|_| ToolError::Failed("could not look up the caller's role".to_owned()))?;
        let account = db::models::user::find(&mut conn, ctx.user_id)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| ToolError::NotPermitted("the account no longer exists".to_owned()))?;
        self.signer
            .sign(ctx.user_id, &ctx.username, &account.role, audience)
            .map_err(ToolError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{decode, DecodingKey, Validation};

    #[test]
    fn signed_token_verifies_against_the_jwks() {
        let der = IdentitySigner::generate_pkcs8().unwrap();
        let signer = IdentitySigner::from_pkcs8(&der).unwrap();
        let id = uuid::Uuid::new_v4();
        let token = signer.sign(id, "alice", "member", "time").unwrap();
        let jwk = &signer.jwks()["keys"][0];
        let key = DecodingKey::from_ed_components(jwk["x"].as_str().unwrap()).unwrap();
        let mut v = Validation::new(Algorithm::EdDSA);
        v.set_audience(&["time"]);
        v.set_issuer(&[ISSUER]);
        let data = decode::<Value>(&token, &key, &v).unwrap();
        assert_eq!(data.claims["sub"], id.to_string());
        assert_eq!(data.claims["preferred_username"], "alice");
        assert_eq!(data.claims["role"], "member");
        let ttl = data.claims["exp"].as_i64().unwrap() - data.claims["iat"].as_i64().unwrap();
        assert!(ttl <= 60);
        assert_eq!(data.header.kid.as_deref(), jwk["kid"].as_str());
        // Another audience is refused.
        let mut other = Validation::new(Algorithm::EdDSA);
        other.set_audience(&["github"]);
        assert!(decode::<Value>(&token, &key, &other).is_err());
        // The same key loads to the same id.
        let again = IdentitySigner::from_pkcs8(&der).unwrap();
        assert_eq!(again.jwks(), signer.jwks());
        assert!(IdentitySigner::from_pkcs8(b"junk").is_err());
    }
}
