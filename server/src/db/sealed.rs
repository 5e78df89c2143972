//! Secrets the database keeps (provider keys added through the admin API), sealed with
//! AES-256-GCM under a key from the environment (`AGENTCHAT_SECRET_KEY`, 32 bytes in
//! base64): a dump or a read-only leak of the database shows no key in clear. Each value is
//! bound to what it belongs to (the provider's name), so one sealed value cannot be moved
//! to another row. Without the setting, values are stored as before (in clear) and the
//! server says so at start.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

/// The prefix of a sealed value (its format's version).
const PREFIX: &str = "v1:";

/// A key that seals and opens stored secrets.
pub struct SealingKey(LessSafeKey);

impl SealingKey {
    /// The key from its base64 form (32 bytes).
    pub fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|_| "is not base64".to_owned())?;
        if bytes.len() != 32 {
            return Err(format!("must be 32 bytes (it is {})", bytes.len()));
        }
        let key = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| "is not a key".to_owned())?;
        Ok(Self(LessSafeKey::new(key)))
    }

    /// The configured key (`auth.secret_key`), if any; validated when the settings load.
    pub fn of(settings: &crate::config::Settings) -> Option<Self> {
        use secrecy::ExposeSecret;
        let text = settings.auth.secret_key.as_ref()?;
        Self::from_base64(text.expose_secret()).ok()
    }

    /// `secret` sealed for `owner`: `v1:` and base64 of nonce, ciphertext and tag.
    pub fn seal(&self, secret: &str, owner: &str) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| "no randomness".to_owned())?;
        let mut data = secret.as_bytes().to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(owner.as_bytes()),
                &mut data,
            )
            .map_err(|_| "sealing failed".to_owned())?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{PREFIX}{}", STANDARD.encode(out)))
    }

    /// The secret `sealed` holds for `owner`; `None` when it was sealed under another key
    /// or for another owner, or is not a sealed value.
    pub fn open(&self, sealed: &str, owner: &str) -> Option<String> {
        let bytes = STANDARD.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, data) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut data = data.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(owner.as_bytes()), &mut data)
            .ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SealingKey {
        SealingKey::from_base64(&STANDARD.encode([byte; 32])).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_its_owner() {
        let k = key(7);
        let sealed = k.seal("sk-canary", "anth").unwrap_or_default();
        assert!(
            sealed.starts_with("v1:") && !sealed.contains("sk-canary"),
            "{sealed}"
        );
        assert_eq!(k.open(&sealed, "anth").as_deref(), Some("sk-canary"));
        assert_eq!(k.open(&sealed, "other"), None, "bound to its owner");
        assert_eq!(key(8).open(&sealed, "anth"), None, "another key");
        assert_ne!(
            sealed,
            k.seal("sk-canary", "anth").unwrap_or_default(),
            "fresh nonce"
        );
        assert_eq!(k.open("sk-plain", "anth"), None);
    }

    #[test]
    fn a_key_must_be_32_bytes_of_base64() {
        assert!(SealingKey::from_base64("not base64!").is_err());
        assert!(SealingKey::from_base64(&STANDARD.encode([1u8; 16])).is_err());
        assert!(SealingKey::from_base64(&STANDARD.encode([1u8; 32])).is_ok());
    }
}
