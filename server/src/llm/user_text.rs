//! What a failed model call tells the user: a stable, helpful sentence per kind of failure.
//! The upstream's own text (which can name hosts, echo bodies or keys) goes to the log only.

use super::LlmError;

impl LlmError {
    /// What the user is told: stable and helpful, never the upstream's text, hostnames or
    /// bodies (those go to the log, see [`LlmError::log`]).
    pub fn user_message(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => {
                "the model provider is busy (rate limited); wait a moment and try again"
            }
            LlmError::Upstream { status, .. } if *status >= 500 => {
                "the model provider had an internal error; try again in a moment"
            }
            LlmError::Upstream { .. } => {
                "the model provider refused the request; if this keeps happening, tell an administrator"
            }
            LlmError::Timeout(_) => "the model took too long to answer; try again",
            LlmError::Connect(_) => "the model provider could not be reached; try again later",
            LlmError::Malformed(_) | LlmError::StreamEndedEarly => {
                "the model's answer was cut off or garbled; try again"
            }
            LlmError::CircuitOpen(_) => {
                "the model provider is failing and was taken out of service for a while; try again later or pick another model"
            }
            LlmError::Config(_) => {
                "the model provider is not configured correctly; tell an administrator"
            }
        }
    }

    /// Logs the full error (for operators) and returns the user-facing message.
    pub fn log(&self) -> &'static str {
        tracing::warn!(error = %self, code = self.code(), "the model call failed");
        self.user_message()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_never_carries_upstream_details() {
        let errors = [
            LlmError::Upstream {
                status: 400,
                message: "key sk-secret at gw.internal".into(),
            },
            LlmError::Upstream {
                status: 503,
                message: "pod-7.internal down".into(),
            },
            LlmError::Connect("tcp connect 10.1.2.3:443 refused".into()),
            LlmError::Malformed("body: {\"secret\": 1}".into()),
            LlmError::Config("https://user:pw@host".into()),
            LlmError::RateLimited { retry_after: None },
            LlmError::Timeout("idle"),
            LlmError::StreamEndedEarly,
        ];
        for e in errors {
            let shown = e.user_message();
            for leak in [
                "sk-secret",
                "gw.internal",
                "pod-7",
                "10.1.2.3",
                "\"secret\"",
                "pw@",
            ] {
                assert!(!shown.contains(leak), "{e}: {shown}");
            }
        }
    }
}
