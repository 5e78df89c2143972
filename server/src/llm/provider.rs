//! Building the configured provider from the settings.

use super::{anthropic, demo, http, openai, HttpSettings, LlmError, LlmProvider};

/// Builds the configured provider (the offline demo model when none is configured).
pub fn from_settings(
    settings: &crate::config::LlmSettings,
    on_retry: http::RetryHook,
) -> Result<std::sync::Arc<dyn LlmProvider>, LlmError> {
    use crate::config::ProviderKind;
    use secrecy::ExposeSecret;
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
    Ok(match settings.provider {
        ProviderKind::Openai => std::sync::Arc::new(openai::OpenAiProvider::new(
            settings.base_url.clone(),
            key,
            http,
        )?),
        ProviderKind::Anthropic => std::sync::Arc::new(anthropic::AnthropicProvider::new(
            settings.base_url.clone(),
            key,
            http,
        )?),
        ProviderKind::Demo => {
            std::sync::Arc::new(demo::DemoProvider::with_delay(settings.demo_delay))
        }
    })
}
