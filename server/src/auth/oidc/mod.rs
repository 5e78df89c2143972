//! Single sign-on with OpenID Connect: the provider (discovery, code flow with PKCE, ID
//! token verification with key rotation), the signed login-state cookie, groups to role,
//! and the account an identity signs in as. Also holds the SCIM token's digest.

pub mod account;
pub mod error;
pub mod login_state;
pub mod provider;
pub mod roles;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use error::SsoError;
pub use provider::{Identity, Provider};

use crate::config::Settings;

/// What single sign-on and SCIM need at run time.
pub struct Sso {
    /// `None` while `oidc.issuer` is unset.
    pub provider: Option<Provider>,
    pub login_state: login_state::StateSigner,
    pub roles: roles::RoleMap,
    /// SHA-256 of the SCIM bearer token; `None`: SCIM is off.
    scim_token_digest: Option<[u8; 32]>,
}

impl Sso {
    /// `redirect_url` is the configured one or, unset, the server's own callback URL.
    pub fn new(settings: &Settings, server_secret: &[u8], port: u16) -> anyhow::Result<Self> {
        let oidc = &settings.oidc;
        let provider = if oidc.enabled() {
            let redirect = oidc.redirect_url.clone().unwrap_or_else(|| {
                format!("{}/api/auth/oidc/callback", settings.browser_url(port))
            });
            Some(Provider::new(oidc, &redirect)?)
        } else {
            None
        };
        Ok(Self {
            provider,
            login_state: login_state::StateSigner::new(server_secret),
            roles: roles::RoleMap::new(
                oidc.role_pairs(),
                oidc.default_role.clone(),
                oidc.require_group,
            ),
            scim_token_digest: settings.scim.token.as_ref().map(|t| {
                use secrecy::ExposeSecret;
                Sha256::digest(t.expose_secret().as_bytes()).into()
            }),
        })
    }

    /// Fetches the provider's discovery document in the background, so the first sign-in
    /// does not wait for it.
    pub fn spawn_warm_up(self: &Arc<Self>) {
        if self.provider.is_some() {
            let sso = self.clone();
            tokio::spawn(async move {
                if let Some(p) = &sso.provider {
                    p.warm_up().await;
                }
            });
        }
    }

    /// Whether SCIM is on.
    pub fn scim_enabled(&self) -> bool {
        self.scim_token_digest.is_some()
    }

    /// Compares the presented token's digest with the stored one in constant time.
    pub fn scim_token_matches(&self, presented: &str) -> bool {
        let Some(expected) = &self.scim_token_digest else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        login_state::digests_equal(&digest, expected)
    }
}
