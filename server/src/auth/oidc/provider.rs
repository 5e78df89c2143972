//! The OpenID provider as seen from here: discovery (cached), the authorization request
//! (code flow with PKCE, `state`, `nonce`), the code exchange and the ID token's
//! verification against the provider's keys, refetched (rate-limited) when a token names a
//! key not seen yet — how providers rotate keys.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdTokenVerifier, CoreJsonWebKeySet,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, IdToken, IdTokenClaims, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, SignatureVerificationError, TokenResponse,
};
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::error::SsoError;
use super::login_state::{LoginState, LIFETIME_SECS};
use super::roles::groups_from_claim;
use crate::config::OidcSettings;

/// Claims beyond the standard ones (the groups claim's name is a setting).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExtraClaims {
    #[serde(flatten)]
    other: HashMap<String, serde_json::Value>,
}

impl AdditionalClaims for ExtraClaims {}

type GroupsIdToken = IdToken<
    ExtraClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type Claims = IdTokenClaims<ExtraClaims, CoreGenderClaim>;

/// Who the provider says signed in, after the ID token was verified.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// `preferred_username`, else the e-mail's local part, else the name: a username hint.
    pub username_hint: String,
    pub groups: Vec<String>,
    /// Entra ID's object id (`oid`), which Entra's SCIM sends as `externalId`.
    pub object_id: Option<String>,
}

/// Discovery document and keys, as last fetched.
struct Discovered {
    metadata: CoreProviderMetadata,
    keys_fetched: Instant,
}

/// One configured provider.
pub struct Provider {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    redirect: RedirectUrl,
    scopes: Vec<String>,
    groups_claim: String,
    min_refetch: Duration,
    http: reqwest::Client,
    discovered: Mutex<Option<Discovered>>,
}

impl Provider {
    /// Checks the URLs; nothing is fetched until the first sign-in (or [`Provider::warm_up`]).
    pub fn new(settings: &OidcSettings, redirect_url: &str) -> anyhow::Result<Self> {
        let issuer = settings
            .issuer
            .clone()
            .ok_or_else(|| anyhow::anyhow!("oidc.issuer is not set"))?;
        let http = reqwest::Client::builder()
            // The provider's answers are followed by nobody: a redirect is an error (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .build()?;
        Ok(Self {
            issuer: IssuerUrl::new(issuer)?,
            client_id: ClientId::new(settings.client_id.clone().unwrap_or_default()),
            client_secret: settings
                .client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.expose_secret().to_owned())),
            redirect: RedirectUrl::new(redirect_url.to_owned())?,
            scopes: settings.scopes.clone(),
            groups_claim: settings.groups_claim.clone(),
            min_refetch: settings.jwks_min_refetch,
            http,
            discovered: Mutex::new(None),
        })
    }

    /// Fetches discovery and keys now, so a misconfiguration shows in the log at start.
    pub async fn warm_up(&self) {
        if let Err(e) = self.metadata().await {
            tracing::warn!(error = %e, issuer = %self.issuer.as_str(), "single sign-on: the provider's discovery failed");
        }
    }

    /// The discovery document (fetched once, then kept; a failure is retried next time).
    async fn metadata(&self) -> Result<CoreProviderMetadata, SsoError> {
        let mut slot = self.discovered.lock().await;
        if let Some(d) = slot.as_ref() {
            return Ok(d.metadata.clone());
        }
        // Checks that the document names exactly the configured issuer.
        let metadata = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|e| SsoError::Discovery(e.to_string()))?;
        *slot = Some(Discovered {
            metadata: metadata.clone(),
            keys_fetched: Instant::now(),
        });
        Ok(metadata)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
    ) -> CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    > {
        CoreClient::from_provider_metadata(
            metadata,
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// Where to send the browser, and the secrets the callback will need.
    pub async fn begin(&self, now: i64) -> Result<(url::Url, LoginState), SsoError> {
        let client = self.client(self.metadata().await?);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        // `openid` is always sent by the crate.
        for scope in self.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok((
            url,
            LoginState {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                expires_at: now + LIFETIME_SECS,
            },
        ))
    }

    /// Redeems the code (with the PKCE verifier) and verifies the ID token: signature from
    /// the provider's keys, issuer, audience, expiry and the nonce of this browser's sign-in.
    pub async fn finish(&self, code: &str, login: &LoginState) -> Result<Identity, SsoError> {
        let metadata = self.metadata().await?;
        let client = self.client(metadata.clone());
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| SsoError::Discovery(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(login.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| SsoError::TokenExchange(e.to_string()))?;
        let raw = response
            .id_token()
            .ok_or_else(|| SsoError::InvalidIdToken("the token response has no ID token".into()))?
            .to_string();
        let token: GroupsIdToken = raw
            .parse()
            .map_err(|e: serde_json::Error| SsoError::InvalidIdToken(e.to_string()))?;
        let nonce = Nonce::new(login.nonce.clone());
        let algs = asymmetric_algs(metadata.id_token_signing_alg_values_supported());
        let claims = match self.verify(&token, &nonce, &algs, metadata.jwks().clone()) {
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => match self.refetch_keys().await {
                Some(keys) => self.verify(&token, &nonce, &algs, keys),
                None => Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )),
            },
            other => other,
        }
        .map_err(|e| SsoError::InvalidIdToken(e.to_string()))?;
        Ok(self.identity(&claims))
    }

    fn verify(
        &self,
        token: &GroupsIdToken,
        nonce: &Nonce,
        algs: &[CoreJwsSigningAlgorithm],
        keys: CoreJsonWebKeySet,
    ) -> Result<Claims, ClaimsVerificationError> {
        // A public-client verifier: only the provider's asymmetric keys, never an HMAC made
        // with the client secret. Expiry is checked without leeway.
        let verifier = CoreIdTokenVerifier::new_public_client(
            self.client_id.clone(),
            self.issuer.clone(),
            keys,
        )
        .set_allowed_algs(algs.iter().cloned());
        token.claims(&verifier, nonce).cloned()
    }

    /// The provider's current keys, unless they were fetched less than `min_refetch` ago.
    async fn refetch_keys(&self) -> Option<CoreJsonWebKeySet> {
        let mut slot = self.discovered.lock().await;
        let d = slot.as_mut()?;
        if d.keys_fetched.elapsed() < self.min_refetch {
            tracing::warn!("single sign-on: an ID token names an unknown key; keys were fetched too recently to fetch again");
            return None;
        }
        d.keys_fetched = Instant::now();
        let keys = CoreJsonWebKeySet::fetch_async(d.metadata.jwks_uri(), &self.http)
            .await
            .map_err(|e| tracing::warn!(error = %e, "single sign-on: refetching the provider's keys failed"))
            .ok()?;
        d.metadata = d.metadata.clone().set_jwks(keys.clone());
        tracing::info!("single sign-on: the provider's keys were refetched (key rotation)");
        Some(keys)
    }

    fn identity(&self, claims: &Claims) -> Identity {
        let extra = &claims.additional_claims().other;
        let text = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let username_hint = text(claims.preferred_username().map(|u| u.as_str().to_owned()))
            .or_else(|| text(claims.email().map(|e| e.as_str().to_owned())))
            .or_else(|| {
                text(
                    claims
                        .name()
                        .and_then(|n| n.get(None))
                        .map(|n| n.as_str().to_owned()),
                )
            })
            .unwrap_or_else(|| "user".to_owned());
        Identity {
            issuer: claims.issuer().as_str().to_owned(),
            subject: claims.subject().as_str().to_owned(),
            username_hint,
            groups: groups_from_claim(extra.get(&self.groups_claim)),
            object_id: extra.get("oid").and_then(|v| v.as_str()).map(str::to_owned),
        }
    }
}

/// The signing algorithms the provider announces for ID tokens, less the symmetric ones (an
/// HMAC keyed with the client secret proves nothing about the provider) and `none`; RS256
/// when it announces nothing usable.
fn asymmetric_algs(announced: &[CoreJwsSigningAlgorithm]) -> Vec<CoreJwsSigningAlgorithm> {
    use CoreJwsSigningAlgorithm as A;
    let algs: Vec<_> = announced
        .iter()
        .filter(|a| !matches!(a, A::HmacSha256 | A::HmacSha384 | A::HmacSha512 | A::None))
        .cloned()
        .collect();
    if algs.is_empty() {
        vec![A::RsaSsaPkcs1V15Sha256]
    } else {
        algs
    }
}

#[cfg(test)]
mod tests {
    use super::asymmetric_algs;
    use openidconnect::core::CoreJwsSigningAlgorithm as A;

    #[test]
    fn only_asymmetric_algorithms_are_accepted() {
        assert_eq!(
            asymmetric_algs(&[
                A::HmacSha256,
                A::RsaSsaPkcs1V15Sha256,
                A::None,
                A::EcdsaP256Sha256
            ]),
            [A::RsaSsaPkcs1V15Sha256, A::EcdsaP256Sha256]
        );
        assert_eq!(asymmetric_algs(&[A::HmacSha256]), [A::RsaSsaPkcs1V15Sha256]);
        assert_eq!(asymmetric_algs(&[]), [A::RsaSsaPkcs1V15Sha256]);
    }
}
