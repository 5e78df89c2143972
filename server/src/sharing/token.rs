//! A link's id: its secret. 16 bytes from the operating system's generator, base64url
//! without padding (22 characters) — as unguessable as an API key's secret.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;

/// A new, unguessable share id.
pub(crate) fn new_share_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `id` could be a share id at all (22–64 base64url characters): anything else is
/// "not found" without asking the database.
pub fn looks_like_share_id(id: &str) -> bool {
    (22..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_long_random_and_url_safe() {
        let a = new_share_id();
        let b = new_share_id();
        assert_eq!(a.len(), 22);
        assert_ne!(a, b);
        assert!(looks_like_share_id(&a) && looks_like_share_id(&b));
        for bad in [
            "",
            "short",
            "has space in it padded out!!",
            "../../../etc/passwd/xxxxxx",
        ] {
            assert!(!looks_like_share_id(bad), "{bad}");
        }
        assert!(!looks_like_share_id(&"a".repeat(65)));
    }
}
