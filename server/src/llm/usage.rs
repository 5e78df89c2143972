//! What a model call used, in tokens, as every provider's report is read into it, and the
//! bound on what a call could have used (a report past it is cut before it is stored or
//! charged).

use serde::{Deserialize, Serialize};

/// Token usage of one model call, normalised across providers: `input_tokens` counts every
/// prompt token (OpenAI's `prompt_tokens` already does; Anthropic's `input_tokens` leaves the
/// cache out, so its cache fields are added), and the cache counts say how many of them were
/// read from or written to the provider's prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Every prompt token, cached or not.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those served from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Input and output without cache detail.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// The tokens by how they are charged (uncached input is what the cache did not cover).
    pub fn counts(&self) -> crate::domain::pricing::TokenCounts {
        let cache_read = self.cache_read_tokens.min(self.input_tokens);
        let cache_write = self.cache_write_tokens.min(self.input_tokens - cache_read);
        crate::domain::pricing::TokenCounts {
            input: self.input_tokens - cache_read - cache_write,
            cache_read,
            cache_write,
            output: self.output_tokens,
        }
    }

    /// The usage as far as the request could have produced it: input within `max_input`
    /// (the context window), output within `max_output` (the cap the request sent), each
    /// cache count within the input. A provider reporting more (a bug, or a hostile
    /// endpoint) must not be stored or charged beyond what the call could cost. The bool
    /// says whether anything was cut.
    pub fn within(self, max_input: u64, max_output: u64) -> (Self, bool) {
        let input_tokens = self.input_tokens.min(max_input.max(1));
        let cache_read_tokens = self.cache_read_tokens.min(input_tokens);
        let clamped = Self {
            input_tokens,
            output_tokens: self.output_tokens.min(max_output.max(1)),
            cache_read_tokens,
            cache_write_tokens: self
                .cache_write_tokens
                .min(input_tokens - cache_read_tokens),
        };
        (clamped, clamped != self)
    }
}
