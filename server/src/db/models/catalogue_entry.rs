//! Providers and models the admin API added to the model catalogue, each stored as the JSON
//! its `[[providers]]` / `[[models]]` entry would be (a provider's key in it, write-only).

use diesel::sql_types::{Jsonb, Text};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::{ModelConfig, ProviderConfig, ProviderKind};
use crate::db::prepared::sql;

/// Which kind of entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Provider,
    Model,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Model => "model",
        }
    }
}

/// A provider as stored: its key in clear, since it must reach the upstream.
#[derive(Serialize, Deserialize)]
struct StoredProvider {
    name: String,
    kind: ProviderKind,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    connect_timeout_secs: Option<u64>,
    #[serde(default)]
    first_byte_timeout_secs: Option<u64>,
    #[serde(default)]
    idle_timeout_secs: Option<u64>,
    #[serde(default)]
    request_timeout_secs: Option<u64>,
    #[serde(default)]
    max_retries: Option<u32>,
}

impl From<&ProviderConfig> for StoredProvider {
    fn from(p: &ProviderConfig) -> Self {
        Self {
            name: p.name.clone(),
            kind: p.kind,
            base_url: p.base_url.clone(),
            api_key: p.api_key.as_ref().map(|k| k.expose_secret().to_owned()),
            connect_timeout_secs: p.connect_timeout_secs,
            first_byte_timeout_secs: p.first_byte_timeout_secs,
            idle_timeout_secs: p.idle_timeout_secs,
            request_timeout_secs: p.request_timeout_secs,
            max_retries: p.max_retries,
        }
    }
}

impl From<StoredProvider> for ProviderConfig {
    fn from(p: StoredProvider) -> Self {
        Self {
            name: p.name,
            kind: p.kind,
            base_url: p.base_url,
            api_key: p.api_key.filter(|k| !k.is_empty()).map(SecretString::from),
            connect_timeout_secs: p.connect_timeout_secs,
            first_byte_timeout_secs: p.first_byte_timeout_secs,
            idle_timeout_secs: p.idle_timeout_secs,
            request_timeout_secs: p.request_timeout_secs,
            max_retries: p.max_retries,
        }
    }
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Jsonb)]
    spec: serde_json::Value,
}

/// Every added entry, oldest first; one that no longer reads is left out with a warning.
pub async fn list(
    conn: &mut AsyncPgConnection,
) -> diesel::QueryResult<(Vec<ProviderConfig>, Vec<ModelConfig>)> {
    let rows: Vec<Row> =
        sql("SELECT kind, name, spec FROM catalogue_entries ORDER BY created_at, name")
            .load(conn)
            .await?;
    let (mut providers, mut models) = (Vec::new(), Vec::new());
    for row in rows {
        let read = match row.kind.as_str() {
            "provider" => serde_json::from_value::<StoredProvider>(row.spec)
                .map(|p| providers.push(ProviderConfig::from(p))),
            _ => serde_json::from_value::<ModelConfig>(row.spec).map(|m| models.push(m)),
        };
        if let Err(e) = read {
            tracing::warn!(kind = %row.kind, name = %row.name, error = %e,
                "a stored catalogue entry does not read; left out");
        }
    }
    Ok((providers, models))
}

fn spec_of_provider(p: &ProviderConfig) -> serde_json::Value {
    serde_json::to_value(StoredProvider::from(p)).unwrap_or_default()
}

fn spec_of_model(m: &ModelConfig) -> serde_json::Value {
    serde_json::to_value(m).unwrap_or_default()
}

/// The entry as stored.
pub enum Entry<'a> {
    Provider(&'a ProviderConfig),
    Model(&'a ModelConfig),
}

impl Entry<'_> {
    fn parts(&self) -> (EntryKind, &str, serde_json::Value) {
        match self {
            Entry::Provider(p) => (EntryKind::Provider, &p.name, spec_of_provider(p)),
            Entry::Model(m) => (EntryKind::Model, &m.name, spec_of_model(m)),
        }
    }
}

/// Adds the entry; `false` if one of that kind and name is stored.
pub async fn insert(conn: &mut AsyncPgConnection, entry: Entry<'_>) -> diesel::QueryResult<bool> {
    let (kind, name, spec) = entry.parts();
    let n = sql(
        "INSERT INTO catalogue_entries (kind, name, spec) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(kind.as_str())
    .bind::<Text, _>(name)
    .bind::<Jsonb, _>(spec)
    .execute(conn)
    .await?;
    Ok(n > 0)
}

/// Replaces the entry; `false` if none of that kind and name is stored.
pub async fn update(conn: &mut AsyncPgConnection, entry: Entry<'_>) -> diesel::QueryResult<bool> {
    let (kind, name, spec) = entry.parts();
    let n = sql(
        "UPDATE catalogue_entries SET spec = $3, updated_at = now() \
          WHERE kind = $1 AND name = $2",
    )
    .bind::<Text, _>(kind.as_str())
    .bind::<Text, _>(name)
    .bind::<Jsonb, _>(spec)
    .execute(conn)
    .await?;
    Ok(n > 0)
}

/// Removes the entry; `false` if none was stored.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    kind: EntryKind,
    name: &str,
) -> diesel::QueryResult<bool> {
    let n = sql("DELETE FROM catalogue_entries WHERE kind = $1 AND name = $2")
        .bind::<Text, _>(kind.as_str())
        .bind::<Text, _>(name)
        .execute(conn)
        .await?;
    Ok(n > 0)
}
