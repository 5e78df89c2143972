//! URLs as they may be shown anywhere (`config check`, the start banner, logs, the admin
//! API and its trail): without the user name and password a URL can carry, nor the values
//! of query parameters that look like credentials. One rule for every place, so a password
//! in a provider's `base_url` is never printed by one path while another hides it.

/// Query parameter names (lower case) whose values are hidden.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "secret",
    "password",
    "sig",
    "signature",
    "code",
];

/// What a hidden value is replaced with.
pub const REDACTED: &str = "REDACTED";

/// `url` as it may be shown: no credentials, no trailing slash. Text that does not parse as
/// a URL is shown with any `user:password@` cut out all the same.
pub fn shown_url(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url.trim()) else {
        return scrub_urls(url);
    };
    if u.password().is_some() {
        let _ = u.set_password(None);
    }
    if !u.username().is_empty() {
        let _ = u.set_username("");
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let secret = SECRET_PARAMS.contains(&k.to_ascii_lowercase().as_str());
                let v = if secret {
                    REDACTED.to_owned()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string().trim_end_matches('/').to_owned()
}

/// `text` (an error message, a log line) with the `user:password@` of every URL in it cut
/// out: an HTTP client's error names the URL it failed on, credentials and all.
pub fn scrub_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                c == '/' || c == '?' || c == '#' || c.is_whitespace() || "\"'<>()`".contains(c)
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(i) => out.push_str(&authority[i + 1..]),
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Serializes a URL setting as [`shown_url`] shows it (settings are printed, never read
/// back from their serialized form).
pub fn serialize_shown<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    if url.is_empty() {
        return s.serialize_str("");
    }
    s.serialize_str(&shown_url(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_survive_in_a_shown_url() {
        assert_eq!(
            shown_url("https://bob:hunter2@llm.example.com/v1/"),
            "https://llm.example.com/v1"
        );
        assert_eq!(
            shown_url("https://only-user@llm.example.com/v1"),
            "https://llm.example.com/v1"
        );
        let shown = shown_url("https://llm.example.com/v1?api-key=hunter2&region=eu");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("region=eu"), "{shown}");
        assert_eq!(
            shown_url("not a url bob:hunter2@x"),
            "not a url bob:hunter2@x"
        );
        assert!(!shown_url("http://bob:hunter2@[bad").contains("hunter2"));
    }

    #[test]
    fn every_url_in_a_message_loses_its_credentials() {
        let text = "error sending request for url (http://bob:hunter2@127.0.0.1:9/v1/chat): \
                    refused; then https://x:y@z.example/";
        let scrubbed = scrub_urls(text);
        assert!(!scrubbed.contains("hunter2"), "{scrubbed}");
        assert!(!scrubbed.contains("x:y"), "{scrubbed}");
        assert!(
            scrubbed.contains("http://127.0.0.1:9/v1/chat"),
            "{scrubbed}"
        );
        assert!(scrubbed.contains("https://z.example/"), "{scrubbed}");
        assert_eq!(scrub_urls("no url here"), "no url here");
    }
}
