//! `[oidc]` and `[scim]`: single sign-on with an OpenID provider, and provisioning by it.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::serde_util::{secret, secs, string_list};
use super::ConfigError;

/// Shortest accepted SCIM bearer token: the identity provider holds it for years.
pub const MIN_SCIM_TOKEN_BYTES: usize = 32;

/// Sign-in through an OpenID Connect provider. Off while `issuer` is unset.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OidcSettings {
    /// The provider's issuer URL (discovery is read from `{issuer}/.well-known/openid-configuration`).
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    #[serde(with = "secret")]
    pub client_secret: Option<SecretString>,
    /// Where the provider sends the browser back; unset: `{public_url}/api/auth/oidc/callback`.
    pub redirect_url: Option<String>,
    #[serde(deserialize_with = "string_list")]
    pub scopes: Vec<String>,
    /// The ID-token claim holding the user's groups.
    pub groups_claim: String,
    /// `group=role` pairs, tried in order; the first group the user is in decides the role.
    #[serde(deserialize_with = "string_list")]
    pub role_map: Vec<String>,
    /// The role of a user none of whose groups is mapped (unless `require_group`).
    pub default_role: String,
    /// Refuse sign-in to users none of whose groups is in `role_map`.
    pub require_group: bool,
    /// The provider's name on the sign-in button ("Sign in with …").
    pub display_name: String,
    /// `enabled`, or `disabled`: only single sign-on signs people in.
    pub password_login: PasswordLogin,
    /// An ID token signed with an unknown key refetches the provider's keys at most this often.
    #[serde(rename = "jwks_min_refetch_secs", with = "secs")]
    pub jwks_min_refetch: Duration,
}

impl Default for OidcSettings {
    fn default() -> Self {
        Self {
            issuer: None,
            client_id: None,
            client_secret: None,
            redirect_url: None,
            scopes: vec!["openid".into(), "profile".into(), "email".into()],
            groups_claim: "groups".into(),
            role_map: Vec::new(),
            default_role: "member".into(),
            require_group: false,
            display_name: "SSO".into(),
            password_login: PasswordLogin::Enabled,
            jwks_min_refetch: Duration::from_secs(60),
        }
    }
}

/// Whether username and password sign people in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PasswordLogin {
    Enabled,
    Disabled,
}

impl OidcSettings {
    /// Whether single sign-on is configured.
    pub fn enabled(&self) -> bool {
        self.issuer.is_some()
    }

    /// The role map as `(group, role)` pairs, in order.
    pub fn role_pairs(&self) -> Vec<(String, String)> {
        self.role_map
            .iter()
            .filter_map(|p| p.split_once('='))
            .map(|(g, r)| (g.trim().to_owned(), r.trim().to_owned()))
            .collect()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for pair in &self.role_map {
            let ok = pair
                .split_once('=')
                .is_some_and(|(g, r)| !g.trim().is_empty() && !r.trim().is_empty());
            if !ok {
                return Err(ConfigError::invalid(
                    "oidc.role_map",
                    format!("`{pair}` is not `group=role`"),
                ));
            }
        }
        if self.groups_claim.trim().is_empty() {
            return Err(ConfigError::invalid(
                "oidc.groups_claim",
                "must not be empty",
            ));
        }
        let Some(issuer) = &self.issuer else {
            if self.password_login == PasswordLogin::Disabled {
                return Err(ConfigError::invalid(
                    "oidc.password_login",
                    "password sign-in cannot be disabled while single sign-on is not configured \
                     (set oidc.issuer): nobody could sign in",
                ));
            }
            return Ok(());
        };
        for (key, value) in [
            ("oidc.issuer", Some(issuer)),
            ("oidc.redirect_url", self.redirect_url.as_ref()),
        ] {
            if let Some(v) = value {
                match url::Url::parse(v) {
                    Ok(u) if matches!(u.scheme(), "https" | "http") => {}
                    _ => {
                        return Err(ConfigError::invalid(
                            key,
                            format!("`{v}` is not an http(s) URL"),
                        ))
                    }
                }
            }
        }
        if self.client_id.as_deref().is_none_or(str::is_empty) {
            return Err(ConfigError::invalid(
                "oidc.client_id",
                "single sign-on needs the client id the provider gave this application",
            ));
        }
        if !self.scopes.iter().any(|s| s == "openid") {
            return Err(ConfigError::invalid("oidc.scopes", "must include `openid`"));
        }
        Ok(())
    }
}

/// SCIM 2.0 provisioning (`/scim/v2`). Off while `token` is unset.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScimSettings {
    /// The bearer token the identity provider sends.
    #[serde(with = "secret")]
    pub token: Option<SecretString>,
}

impl ScimSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        match &self.token {
            Some(t) if t.expose_secret().len() < MIN_SCIM_TOKEN_BYTES => Err(ConfigError::invalid(
                "scim.token",
                format!(
                    "must be at least {MIN_SCIM_TOKEN_BYTES} bytes; generate one with \
                     `openssl rand -base64 48`"
                ),
            )),
            _ => Ok(()),
        }
    }
}
