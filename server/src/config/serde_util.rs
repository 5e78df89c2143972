//! Serde helpers shared by the settings sections: durations written as whole seconds or
//! milliseconds, secrets that serialize as a placeholder, lists that may be one
//! comma-separated string (the environment's form).

use secrecy::SecretString;
use serde::{Deserialize, Deserializer, Serializer};

/// What a set secret serializes as (in `config check` and anywhere settings are shown).
pub const HIDDEN: &str = "<hidden>";

/// `Duration` as whole seconds.
pub mod secs {
    use super::*;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

/// `Duration` as whole milliseconds.
pub mod millis {
    use super::*;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// `Option<SecretString>`: read as a plain string, shown as [`HIDDEN`] when set.
pub mod secret {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<SecretString>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(_) => s.serialize_str(HIDDEN),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SecretString>, D::Error> {
        let v = Option::<String>::deserialize(d)?;
        Ok(v.filter(|s| !s.is_empty()).map(SecretString::from))
    }
}

/// A list of strings, from a TOML array or one comma-separated string; blanks dropped.
pub fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        One(String),
    }
    let items = match Form::deserialize(d)? {
        Form::List(v) => v,
        Form::One(s) => s.split(',').map(str::to_owned).collect(),
    };
    Ok(items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

/// MCP servers as shown (`config check`): header and environment values are secrets, and
/// URLs lose their credentials.
pub fn mcp_servers_hidden<S: Serializer>(
    servers: &[crate::tools::mcp::McpServerConfig],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(servers.iter().map(|server| {
        let mut shown = server.clone();
        shown
            .headers
            .values_mut()
            .for_each(|v| *v = HIDDEN.to_owned());
        shown.env.values_mut().for_each(|v| *v = HIDDEN.to_owned());
        shown.url = shown.url.as_deref().map(crate::domain::shown_url);
        shown
    }))
}
