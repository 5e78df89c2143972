//! What every search provider is: a query in, hits out, over its own wire format. The three
//! kinds (`searxng`, `brave`, `tavily`) each implement [`SearchApi`] in a file of their own;
//! this file holds what they share: the query, the hit, the ways a call fails and a body
//! reader that stops at a size cap instead of buffering whatever the upstream sends.

use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;

use crate::config::{SearchKind, SearchProviderConfig};

/// One query as it leaves the server (personal data already stripped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub text: String,
    pub max_results: usize,
    /// `day`, `week`, `month` or `year`.
    pub freshness: Option<Freshness>,
    /// Only results from this site (a domain).
    pub site: Option<String>,
}

/// How recent results must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    Day,
    Week,
    Month,
    Year,
}

impl Freshness {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "day" => Some(Freshness::Day),
            "week" => Some(Freshness::Week),
            "month" => Some(Freshness::Month),
            "year" => Some(Freshness::Year),
            _ => None,
        }
    }

    /// The word SearXNG's `time_range` and Tavily's `time_range` take.
    pub fn word(self) -> &'static str {
        match self {
            Freshness::Day => "day",
            Freshness::Week => "week",
            Freshness::Month => "month",
            Freshness::Year => "year",
        }
    }
}

impl Query {
    /// The query text with `site:` appended, for engines that read operators in the text.
    pub fn text_with_site(&self) -> String {
        match &self.site {
            Some(site) => format!("{} site:{site}", self.text),
            None => self.text.clone(),
        }
    }
}

/// One result as a provider gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
    pub published: Option<String>,
}

/// Why a provider gave no results. Every variant counts against its breaker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("answered more than {0} bytes")]
    TooLarge(usize),
    #[error("answered something that is not its JSON format ({0})")]
    Garbage(String),
    #[error("could not be reached ({0})")]
    Network(String),
}

impl Failure {
    /// The short code the audit row keeps.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::Timeout(_) => "timeout",
            Failure::Status(429) => "rate_limited",
            Failure::Status(_) => "http_status",
            Failure::TooLarge(_) => "too_large",
            Failure::Garbage(_) => "bad_json",
            Failure::Network(_) => "network",
        }
    }
}

/// A provider ready to call: its entry, its key in clear, a client and the body cap.
pub struct Endpoint<'a> {
    pub config: &'a SearchProviderConfig,
    pub client: &'a reqwest::Client,
    pub max_bytes: usize,
}

impl Endpoint<'_> {
    /// The base URL without a trailing slash (the vendor's when the entry leaves it empty).
    pub fn base(&self) -> String {
        let base = self.config.base_url.trim();
        let base = if base.is_empty() {
            self.config.kind.default_base_url().unwrap_or_default()
        } else {
            base
        };
        base.trim_end_matches('/').to_owned()
    }

    pub fn api_key(&self) -> String {
        use secrecy::ExposeSecret;
        self.config
            .api_key
            .as_ref()
            .map(|k| k.expose_secret().to_owned())
            .unwrap_or_default()
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.config.timeout_secs.max(1))
    }

    /// Sends `request` under the provider's timeout and reads its JSON answer, at most
    /// `max_bytes` of it.
    pub async fn json<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, Failure> {
        let timeout = self.timeout();
        match tokio::time::timeout(timeout, self.json_inner(request)).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }

    async fn json_inner<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, Failure> {
        let mut response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                Failure::Timeout(self.timeout())
            } else {
                Failure::Network(crate::tools::truncate_chars(&e.to_string(), 200))
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::Status(status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(Failure::TooLarge(self.max_bytes));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::Network(crate::tools::truncate_chars(&e.to_string(), 200)))?
        {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(Failure::TooLarge(self.max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map_err(|e| Failure::Garbage(crate::tools::truncate_chars(&e.to_string(), 120)))
    }
}

/// One wire format.
#[async_trait]
pub trait SearchApi: Send + Sync {
    async fn search(&self, endpoint: &Endpoint<'_>, query: &Query) -> Result<Vec<Hit>, Failure>;
}

/// The implementation of `kind`.
pub fn api(kind: SearchKind) -> &'static dyn SearchApi {
    match kind {
        SearchKind::Searxng => &super::searxng::Searxng,
        SearchKind::Brave => &super::brave::Brave,
        SearchKind::Tavily => &super::tavily::Tavily,
    }
}

/// A snippet as plain text: tags (Brave marks matches with `<strong>`) and entities out,
/// whitespace folded.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_lose_markup() {
        assert_eq!(
            plain("The <strong>Rust</strong>  book &amp; more\n"),
            "The Rust book & more"
        );
        assert_eq!(Freshness::parse("week"), Some(Freshness::Week));
        assert_eq!(Freshness::parse("hour"), None);
    }
}
