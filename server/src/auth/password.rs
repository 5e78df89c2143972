//! Password hashing with argon2id, off the async runtime and with a cap on how many hashes
//! run at once (each needs ~19 MiB), so a login flood queues instead of exhausting memory.

use std::sync::Arc;

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher as _, SaltString};
use argon2::{Algorithm, Argon2, Params, PasswordVerifier as _, Version};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{OnceCell, Semaphore};

use crate::telemetry::spawn_blocking_with_tracing;

/// Allowed password length in characters (no truncation happens anywhere).
pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 128;

/// argon2id parameters: OWASP's minimum (m = 19 MiB, t = 2, p = 1).
fn argon2() -> Result<Argon2<'static>, argon2::Error> {
    Ok(Argon2::new(
        Algorithm::Argon2id,
        Version::V0x13,
        Params::new(19_456, 2, 1, None)?,
    ))
}

/// Checks the length rule; the message is shown to the user.
pub fn check_length(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&n) {
        return Err(format!(
            "password must be between {MIN_PASSWORD_CHARS} and {MAX_PASSWORD_CHARS} characters"
        ));
    }
    Ok(())
}

/// Hashes and verifies passwords on blocking threads.
#[derive(Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    /// Verified against when the user does not exist, so both cases cost the same.
    dummy_hash: Arc<OnceCell<String>>,
}

impl PasswordHasher {
    pub fn new(max_concurrent: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            dummy_hash: Arc::new(OnceCell::new()),
        }
    }

    /// A PHC string for `password`.
    pub async fn hash(&self, password: SecretString) -> anyhow::Result<String> {
        let _permit = self.permits.acquire().await?;
        spawn_blocking_with_tracing(move || {
            let salt = SaltString::generate(&mut OsRng);
            argon2()
                .and_then(|a| {
                    a.hash_password(password.expose_secret().as_bytes(), &salt)
                        .map_err(|_| argon2::Error::AlgorithmInvalid)
                })
                .map(|h| h.to_string())
                .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
        })
        .await?
    }

    /// Whether `password` matches `stored`; with no stored hash the work is done anyway
    /// against a dummy so that unknown users and wrong passwords take the same time.
    pub async fn verify(
        &self,
        password: SecretString,
        stored: Option<String>,
    ) -> anyhow::Result<bool> {
        let known = stored.is_some();
        let stored = match stored {
            Some(h) => h,
            None => self.dummy().await?,
        };
        let _permit = self.permits.acquire().await?;
        let ok = spawn_blocking_with_tracing(move || {
            let parsed = PasswordHash::new(&stored)
                .map_err(|e| anyhow::anyhow!("stored password hash is invalid: {e}"))?;
            Ok::<_, anyhow::Error>(
                argon2()
                    .map_err(|e| anyhow::anyhow!("argon2 parameters: {e}"))?
                    .verify_password(password.expose_secret().as_bytes(), &parsed)
                    .is_ok(),
            )
        })
        .await??;
        Ok(ok && known)
    }

    async fn dummy(&self) -> anyhow::Result<String> {
        self.dummy_hash
            .get_or_try_init(|| self.hash(SecretString::from("dummy password for timing")))
            .await
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_then_verify() {
        let h = PasswordHasher::new(2);
        let hash = h.hash(SecretString::from("correct horse")).await.unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(h
            .verify(SecretString::from("correct horse"), Some(hash.clone()))
            .await
            .unwrap());
        assert!(!h
            .verify(SecretString::from("correct horsf"), Some(hash))
            .await
            .unwrap());
        assert!(!h
            .verify(SecretString::from("correct horse"), None)
            .await
            .unwrap());
    }

    #[test]
    fn length_rule_counts_characters() {
        assert!(check_length("short").is_err());
        assert!(check_length("ééééééé").is_err());
        assert!(check_length("éééééééé").is_ok());
        assert!(check_length(&"x".repeat(128)).is_ok());
        assert!(check_length(&"x".repeat(129)).is_err());
    }
}
