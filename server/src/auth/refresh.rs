//! Opaque refresh tokens: 256 random bits, only their SHA-256 is stored.

use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A new random token (URL-safe base64, 43 characters).
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What is stored and looked up for a token.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_random_and_hashes_stable() {
        let (a, b) = (super::generate(), super::generate());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert_eq!(super::hash(&a), super::hash(&a));
        assert_ne!(super::hash(&a), super::hash(&b));
    }
}
