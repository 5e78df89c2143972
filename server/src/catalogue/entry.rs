//! Providers and models the admin API added to the model catalogue, each stored as the JSON
//! its `[[providers]]` / `[[models]]` entry would be. A provider's key is in it, write-only:
//! sealed (`api_key_sealed`, [`crate::db::sealed`]) when `auth.secret_key` is set, in clear
//! (`api_key`) otherwise.

use diesel::sql_types::{Jsonb, Text};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::{ModelConfig, ProviderConfig, ProviderKind};
use crate::db::prepared::sql;
use crate::db::sealed::SealingKey;

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

/// A provider as stored: its key sealed, or in clear without a sealing key.
#[derive(Serialize, Deserialize)]
struct StoredProvider {
    name: String,
    kind: ProviderKind,
    #[serde(default)]
    base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_key_sealed: Option<String>,
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

impl StoredProvider {
    /// The provider as stored, its key sealed under `key` when there is one.
    fn of(p: &ProviderConfig, key: Option<&SealingKey>) -> Self {
        let clear = p.api_key.as_ref().map(|k| k.expose_secret().to_owned());
        let (api_key, api_key_sealed) = match (clear, key) {
            (Some(k), Some(sealer)) => match sealer.seal(&k, &p.name) {
                Ok(sealed) => (None, Some(sealed)),
                // No randomness to seal with: never fall back to clear text.
                Err(e) => {
                    tracing::error!(provider = %p.name, error = %e, "could not seal a provider key; not stored");
                    (None, None)
                }
            },
            (clear, _) => (clear, None),
        };
        Self {
            name: p.name.clone(),
            kind: p.kind,
            base_url: p.base_url.clone(),
            api_key,
            api_key_sealed,
            connect_timeout_secs: p.connect_timeout_secs,
            first_byte_timeout_secs: p.first_byte_timeout_secs,
            idle_timeout_secs: p.idle_timeout_secs,
            request_timeout_secs: p.request_timeout_secs,
            max_retries: p.max_retries,
        }
    }

    /// The provider as configured: a sealed key opened with `key` (left out, with a
    /// warning, when it cannot be).
    fn into_config(self, key: Option<&SealingKey>) -> ProviderConfig {
        let opened = self.api_key_sealed.as_deref().and_then(|sealed| {
            let opened = key.and_then(|k| k.open(sealed, &self.name));
            if opened.is_none() {
                tracing::warn!(provider = %self.name,
                    "a stored provider key is sealed under another key (or none is set): set \
                     AGENTCHAT_SECRET_KEY to the key it was sealed with, or rotate it");
            }
            opened
        });
        let p = self;
        ProviderConfig {
            name: p.name,
            kind: p.kind,
            base_url: p.base_url,
            api_key: opened
                .or(p.api_key)
                .filter(|k| !k.is_empty())
                .map(SecretString::from),
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
/// Sealed keys are opened with `key`.
pub async fn list(
    conn: &mut AsyncPgConnection,
    key: Option<&SealingKey>,
) -> diesel::QueryResult<(Vec<ProviderConfig>, Vec<ModelConfig>)> {
    let rows: Vec<Row> =
        sql("SELECT kind, name, spec FROM catalogue_entries ORDER BY created_at, name")
            .load(conn)
            .await?;
    let (mut providers, mut models) = (Vec::new(), Vec::new());
    for row in rows {
        let read = match row.kind.as_str() {
            "provider" => serde_json::from_value::<StoredProvider>(row.spec)
                .map(|p| providers.push(p.into_config(key))),
            _ => serde_json::from_value::<ModelConfig>(row.spec).map(|m| models.push(m)),
        };
        if let Err(e) = read {
            tracing::warn!(kind = %row.kind, name = %row.name, error = %e,
                "a stored catalogue entry does not read; left out");
        }
    }
    Ok((providers, models))
}

fn spec_of_provider(p: &ProviderConfig, key: Option<&SealingKey>) -> serde_json::Value {
    serde_json::to_value(StoredProvider::of(p, key)).unwrap_or_default()
}

fn spec_of_model(m: &ModelConfig) -> serde_json::Value {
    serde_json::to_value(m).unwrap_or_default()
}

/// The entry as stored.
#[derive(Clone, Copy)]
pub enum Entry<'a> {
    Provider(&'a ProviderConfig),
    Model(&'a ModelConfig),
}

impl Entry<'_> {
    fn parts(&self, key: Option<&SealingKey>) -> (EntryKind, &str, serde_json::Value) {
        match self {
            Entry::Provider(p) => (EntryKind::Provider, &p.name, spec_of_provider(p, key)),
            Entry::Model(m) => (EntryKind::Model, &m.name, spec_of_model(m)),
        }
    }
}

/// Adds the entry (a provider's key sealed under `key`); `false` if one of that kind and
/// name is stored.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    entry: Entry<'_>,
    key: Option<&SealingKey>,
) -> diesel::QueryResult<bool> {
    let (kind, name, spec) = entry.parts(key);
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

/// Replaces the entry (a provider's key sealed under `key`); `false` if none of that kind
/// and name is stored.
pub async fn update(
    conn: &mut AsyncPgConnection,
    entry: Entry<'_>,
    key: Option<&SealingKey>,
) -> diesel::QueryResult<bool> {
    let (kind, name, spec) = entry.parts(key);
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

/// Re-seals every stored provider key under `to` (in clear when `None`): keys sealed under
/// `from`, and keys stored in clear. One transaction; fails, changing nothing, when a
/// sealed key opens with neither `from` nor `to` (the wrong old key). Returns how many
/// providers were rewritten.
pub async fn rotate(
    conn: &mut AsyncPgConnection,
    from: Option<&SealingKey>,
    to: Option<&SealingKey>,
) -> anyhow::Result<usize> {
    use diesel_async::scoped_futures::ScopedFutureExt;
    use diesel_async::AsyncConnection;
    conn.transaction(|conn| {
        async move {
            let rows: Vec<Row> = sql(
                "SELECT kind, name, spec FROM catalogue_entries WHERE kind = 'provider' FOR UPDATE",
            )
            .load(conn)
            .await?;
            let mut rewritten = 0;
            for row in rows {
                let stored: StoredProvider = serde_json::from_value(row.spec)?;
                if stored.api_key.is_none() && stored.api_key_sealed.is_none() {
                    continue;
                }
                if let Some(sealed) = &stored.api_key_sealed {
                    let opens = [from, to]
                        .into_iter()
                        .flatten()
                        .any(|k| k.open(sealed, &stored.name).is_some());
                    if !opens {
                        anyhow::bail!(
                            "the key of provider `{}` opens with neither the old nor the new key: \
                             nothing was changed",
                            stored.name
                        );
                    }
                }
                let name = stored.name.clone();
                let opened = match (&stored.api_key_sealed, from) {
                    (Some(sealed), Some(old)) if old.open(sealed, &name).is_some() => {
                        stored.into_config(Some(old))
                    }
                    _ => stored.into_config(to),
                };
                update(conn, Entry::Provider(&opened), to).await?;
                rewritten += 1;
            }
            Ok(rewritten)
        }
        .scope_boxed()
    })
    .await
}
