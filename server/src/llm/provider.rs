//! Building provider clients from the settings.

use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;

use super::{anthropic, demo, http, openai, HttpSettings, LlmError, LlmProvider};
use crate::config::{LlmSettings, ProviderConfig, ProviderKind};

/// Builds the `[llm]` provider (the offline demo model when none is configured).
pub fn from_settings(
    settings: &LlmSettings,
    on_retry: http::RetryHook,
) -> Result<Arc<dyn LlmProvider>, LlmError> {
    let http = HttpSettings {
        connect_timeout: settings.connect_timeout,
        first_byte_timeout: settings.first_byte_timeout,
        idle_timeout: settings.idle_timeout,
        total_timeout: settings.request_timeout,
        max_retries: settings.max_retries,
        retry_base_delay: settings.retry_base_delay,
        streaming: settings.streaming,
        on_retry,
    };
    let key = settings
        .api_key
        .as_ref()
        .map(|k| k.expose_secret().to_owned());
    build(
        settings.provider,
        settings.base_url.clone(),
        key,
        http,
        settings.demo_delay,
    )
}

/// Builds one `[[providers]]` entry; what it leaves unset is `[llm]`'s.
pub fn from_entry(
    entry: &ProviderConfig,
    llm: &LlmSettings,
    on_retry: http::RetryHook,
) -> Result<Arc<dyn LlmProvider>, LlmError> {
    let secs = |v: Option<u64>, fallback: Duration| v.map(Duration::from_secs).unwrap_or(fallback);
    let http = HttpSettings {
        connect_timeout: secs(entry.connect_timeout_secs, llm.connect_timeout),
        first_byte_timeout: secs(entry.first_byte_timeout_secs, llm.first_byte_timeout),
        idle_timeout: secs(entry.idle_timeout_secs, llm.idle_timeout),
        total_timeout: secs(entry.request_timeout_secs, llm.request_timeout),
        max_retries: entry.max_retries.unwrap_or(llm.max_retries),
        retry_base_delay: llm.retry_base_delay,
        streaming: llm.streaming,
        on_retry,
    };
    let base_url = match entry.base_url.trim().trim_end_matches('/') {
        "" => entry.kind.vendor_base_url().to_owned(),
        url => url.to_owned(),
    };
    let key = entry.api_key.as_ref().map(|k| k.expose_secret().to_owned());
    build(entry.kind, base_url, key, http, llm.demo_delay)
}

fn build(
    kind: ProviderKind,
    base_url: String,
    key: Option<String>,
    http: HttpSettings,
    demo_delay: Duration,
) -> Result<Arc<dyn LlmProvider>, LlmError> {
    Ok(match kind {
        ProviderKind::Openai => Arc::new(openai::OpenAiProvider::new(base_url, key, http)?),
        ProviderKind::Anthropic => {
            Arc::new(anthropic::AnthropicProvider::new(base_url, key, http)?)
        }
        ProviderKind::Demo => Arc::new(demo::DemoProvider::with_delay(demo_delay)),
    })
}
