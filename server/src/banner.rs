//! What the server tells the operator when it starts: where to open it, which model answers,
//! who may register. Plain text when the output is not a terminal.

use std::fmt::Write as _;
use std::io::IsTerminal;

use crate::config::{ProviderKind, Registration, Settings};

/// Facts known once the server is bound.
pub struct StartFacts {
    pub port: u16,
    /// `Some(false)`: no account exists yet; `None`: the database could not say.
    pub has_users: Option<bool>,
    /// `AGENTCHAT_` variables that are not settings (likely typos), with a suggestion.
    pub unknown_env: Vec<(String, Option<&'static str>)>,
    /// How this binary was started (`./target/release/agentchat`), for the hints.
    pub program: String,
}

/// Whether standard output takes colour codes (a terminal, and `NO_COLOR` unset).
pub fn use_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The start message.
pub fn render(settings: &Settings, facts: &StartFacts, colour: bool) -> String {
    let bold = |s: &str| {
        if colour {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} is running.",
        bold("AgentChat"),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        out,
        "  Open          {}",
        bold(&settings.browser_url(facts.port))
    );
    let llm = &settings.llm;
    let model = match llm.provider {
        ProviderKind::Demo => "demo: the built-in offline demo model (no API key needed; set \
                               AGENTCHAT_LLM_PROVIDER=openai or anthropic for a real one)"
            .to_owned(),
        ProviderKind::Openai => format!(
            "{} via the OpenAI-compatible API at {}",
            llm.model, llm.base_url
        ),
        ProviderKind::Anthropic => format!("{} via Anthropic at {}", llm.model, llm.base_url),
    };
    let _ = writeln!(out, "  Model         {model}");
    let registration = match (settings.auth.registration, facts.has_users) {
        (Registration::Open, Some(false)) => {
            "open; no account exists yet: the first account registered becomes the admin"
        }
        (Registration::Open, _) => "open: anyone who can reach the server may create an account",
        (Registration::Closed, Some(false)) => {
            "closed and no account exists: create the admin with `create-admin` (see --help)"
        }
        (Registration::Closed, _) => "closed: only admins create accounts",
    };
    let _ = writeln!(out, "  Registration  {registration}");
    let _ = writeln!(out, "  Database      {}", settings.database.url.redacted());
    for (name, near) in &facts.unknown_env {
        let hint = near
            .map(|n| format!(" (did you mean {n}?)"))
            .unwrap_or_default();
        let _ = writeln!(out, "  Warning       {name} is not a setting{hint}");
    }
    let _ = writeln!(
        out,
        "  `{} config check` shows every setting and where it came from. Ctrl+C stops.",
        facts.program
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn says_where_to_go_and_who_becomes_admin_without_colour_codes() {
        let s = Settings::default();
        let facts = StartFacts {
            port: 8080,
            has_users: Some(false),
            unknown_env: vec![("AGENTCHAT_LLM_MODLE".into(), Some("AGENTCHAT_LLM_MODEL"))],
            program: "./target/release/agentchat".into(),
        };
        let text = render(&s, &facts, false);
        assert!(text.contains("http://127.0.0.1:8080"), "{text}");
        assert!(text.contains("offline demo model"), "{text}");
        assert!(
            text.contains("first account registered becomes the admin"),
            "{text}"
        );
        assert!(text.contains("did you mean AGENTCHAT_LLM_MODEL"), "{text}");
        assert!(
            text.contains("./target/release/agentchat config check"),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "{text}");
        assert!(render(&s, &facts, true).contains('\x1b'));
    }
}
