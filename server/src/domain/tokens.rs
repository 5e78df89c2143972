//! The local token estimate every layer uses before a provider has counted: the budget's
//! reservations, the context window's cut and the history's stored cost floor.

/// Tokens of chat formatting around each message, on top of its text.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Rough local token count: characters / 4, rounded up, at least 1.
pub fn estimate_tokens(text: &str) -> u64 {
    estimate_tokens_of_chars(text.chars().count())
}

/// [`estimate_tokens`] of a text of `chars` characters.
pub fn estimate_tokens_of_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}
