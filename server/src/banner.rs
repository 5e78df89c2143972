//! What the server tells the operator when it starts: where to open it, which model answers
//! by default and through which providers, whether knowledge is on, where files are kept,
//! who may register. Plain text when the output is not a terminal. URLs are shown without
//! credentials ([`crate::domain::shown_url`]).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

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
    /// The catalogue in force: its default model and the providers its models use.
    pub models: ModelFacts,
    /// `Ok(pgvector version)`, or why knowledge is off.
    pub knowledge: Result<String, KnowledgeOff>,
    /// Where users' files are kept, as an absolute path.
    pub file_store: PathBuf,
}

/// The catalogue as the banner names it.
pub struct ModelFacts {
    /// The model new conversations get.
    pub default_model: String,
    /// The provider serving the default model.
    pub default_provider: Option<String>,
    /// Every provider some model uses, in catalogue order.
    pub providers: Vec<ProviderFacts>,
}

/// One provider in use.
pub struct ProviderFacts {
    pub name: String,
    pub kind: ProviderKind,
    /// Where its requests go; empty for the demo model.
    pub base_url: String,
    pub models: Vec<String>,
}

/// Why knowledge collections are off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnowledgeOff {
    /// `knowledge.enabled = false`.
    TurnedOff,
    /// The database has no (recent enough) pgvector.
    NoPgvector,
}

impl ModelFacts {
    /// The facts of a catalogue.
    pub fn of(catalogue: &crate::catalogue::Snapshot) -> Self {
        let default_model = catalogue.default_model().to_owned();
        let default_provider = catalogue.get(&default_model).map(|m| m.provider.clone());
        let providers = catalogue
            .providers()
            .iter()
            .filter_map(|(p, _)| {
                let models: Vec<String> = catalogue
                    .models()
                    .iter()
                    .filter(|m| m.provider == p.name)
                    .map(|m| m.name.clone())
                    .collect();
                (!models.is_empty()).then(|| ProviderFacts {
                    name: p.name.clone(),
                    kind: p.kind,
                    base_url: match p.base_url.trim() {
                        "" => p.kind.vendor_base_url().to_owned(),
                        url => url.to_owned(),
                    },
                    models,
                })
            })
            .collect();
        Self {
            default_model,
            default_provider,
            providers,
        }
    }
}

/// The facts of a built server: its catalogue, knowledge and file store, and what the
/// caller found out (`has_users`, the environment, how it was started).
pub fn start_facts(
    settings: &Settings,
    knowledge: &crate::knowledge::Availability,
    catalogue: &crate::catalogue::Snapshot,
    port: u16,
    has_users: Option<bool>,
    unknown_env: Vec<(String, Option<&'static str>)>,
    program: String,
) -> StartFacts {
    let knowledge = match knowledge {
        crate::knowledge::Availability::Ready { pgvector } => Ok(pgvector.clone()),
        crate::knowledge::Availability::Off(_) if !settings.knowledge.enabled => {
            Err(KnowledgeOff::TurnedOff)
        }
        crate::knowledge::Availability::Off(_) => Err(KnowledgeOff::NoPgvector),
    };
    let dir = &settings.tools.workspace_dir;
    let file_store = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
    StartFacts {
        port,
        has_users,
        unknown_env,
        program,
        models: ModelFacts::of(catalogue),
        knowledge,
        file_store,
    }
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
    let m = &facts.models;
    let default_kind = m
        .providers
        .iter()
        .find(|p| Some(&p.name) == m.default_provider.as_ref())
        .map(|p| p.kind);
    let demo = default_kind == Some(ProviderKind::Demo)
        || (default_kind.is_none() && m.providers.is_empty());
    let model = if demo {
        format!(
            "{}: the built-in offline demo model (no API key needed; set \
             AGENTCHAT_LLM_PROVIDER=openai or anthropic, or [[providers]] and [[models]], for \
             a real one)",
            m.default_model
        )
    } else {
        let via = m
            .default_provider
            .as_deref()
            .map(|p| format!(" via {p}"))
            .unwrap_or_default();
        format!("{} (the default){via}", m.default_model)
    };
    let _ = writeln!(out, "  Model         {model}");
    for p in &m.providers {
        let place = if p.kind == ProviderKind::Demo {
            "built in".to_owned()
        } else {
            crate::domain::shown_url(&p.base_url)
        };
        let _ = writeln!(
            out,
            "  Provider      {} ({}, {place}): {}",
            p.name,
            kind_name(p.kind),
            p.models.join(", ")
        );
    }
    let knowledge = match &facts.knowledge {
        Ok(version) => format!("on (pgvector {version})"),
        Err(KnowledgeOff::NoPgvector) => {
            "off (no pgvector): collections need the pgvector extension 0.8+ on the database"
                .to_owned()
        }
        Err(KnowledgeOff::TurnedOff) => "off (knowledge.enabled = false)".to_owned(),
    };
    let _ = writeln!(out, "  Knowledge     {knowledge}");
    let _ = writeln!(out, "  Files         {}", facts.file_store.display());
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

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OpenAI-compatible",
        ProviderKind::Anthropic => "Anthropic",
        ProviderKind::Demo => "demo",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn facts(models: ModelFacts, knowledge: Result<String, KnowledgeOff>) -> StartFacts {
        StartFacts {
            port: 8080,
            has_users: Some(false),
            unknown_env: vec![("AGENTCHAT_LLM_MODLE".into(), Some("AGENTCHAT_LLM_MODEL"))],
            program: "./target/release/agentchat".into(),
            models,
            knowledge,
            file_store: PathBuf::from("/var/lib/agentchat/workspaces"),
        }
    }

    fn demo() -> ModelFacts {
        ModelFacts {
            default_model: "demo".into(),
            default_provider: Some("default".into()),
            providers: vec![ProviderFacts {
                name: "default".into(),
                kind: ProviderKind::Demo,
                base_url: String::new(),
                models: vec!["demo".into()],
            }],
        }
    }

    #[test]
    fn says_where_to_go_and_who_becomes_admin_without_colour_codes() {
        let s = Settings::default();
        let facts = facts(demo(), Ok("0.8.0".into()));
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
        assert!(text.contains("Knowledge     on (pgvector 0.8.0)"), "{text}");
        assert!(
            text.contains("Files         /var/lib/agentchat/workspaces"),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "{text}");
        assert!(render(&s, &facts, true).contains('\x1b'));
    }

    #[test]
    fn a_configured_default_and_its_providers_are_named_without_credentials() {
        let models = ModelFacts {
            default_model: "gpt".into(),
            default_provider: Some("oa".into()),
            providers: vec![
                ProviderFacts {
                    name: "oa".into(),
                    kind: ProviderKind::Openai,
                    base_url: "https://bob:hunter2@llm.example.com/v1".into(),
                    models: vec!["gpt".into(), "mini".into()],
                },
                ProviderFacts {
                    name: "an".into(),
                    kind: ProviderKind::Anthropic,
                    base_url: "https://api.anthropic.com".into(),
                    models: vec!["claude".into()],
                },
            ],
        };
        let text = render(
            &Settings::default(),
            &facts(models, Err(KnowledgeOff::NoPgvector)),
            false,
        );
        assert!(!text.contains("demo"), "{text}");
        assert!(
            text.contains("Model         gpt (the default) via oa"),
            "{text}"
        );
        assert!(
            text.contains("oa (OpenAI-compatible, https://llm.example.com/v1): gpt, mini"),
            "{text}"
        );
        assert!(
            text.contains("an (Anthropic, https://api.anthropic.com): claude"),
            "{text}"
        );
        assert!(!text.contains("hunter2") && !text.contains("bob"), "{text}");
        assert!(text.contains("Knowledge     off (no pgvector)"), "{text}");
    }
}
