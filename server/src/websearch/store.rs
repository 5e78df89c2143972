//! Search providers the admin API added (`search_providers`), next to the file's. A key is
//! write-only: sealed under `auth.secret_key` when one is set ([`crate::db::sealed`]), in
//! clear otherwise, like the catalogue's provider keys. Read on every query, so a change made
//! through any server process applies to the next search everywhere.

use diesel::sql_types::{Integer, Nullable, Numeric, Text, Timestamptz};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rust_decimal::Decimal;
use secrecy::{ExposeSecret, SecretString};

use crate::config::{SearchKind, SearchProviderConfig};
use crate::db::sealed::SealingKey;

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    base_url: String,
    #[diesel(sql_type = Nullable<Text>)]
    api_key: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    api_key_sealed: Option<String>,
    #[diesel(sql_type = Numeric)]
    price_per_query: Decimal,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Integer)]
    timeout_secs: i32,
    #[diesel(sql_type = Timestamptz)]
    #[allow(dead_code)]
    updated_at: chrono::DateTime<chrono::Utc>,
}

impl Row {
    fn into_config(self, key: Option<&SealingKey>) -> Option<SearchProviderConfig> {
        let kind = SearchKind::parse(&self.kind)?;
        let opened = self.api_key_sealed.as_deref().and_then(|sealed| {
            let opened = key.and_then(|k| k.open(sealed, &self.name));
            if opened.is_none() {
                tracing::warn!(provider = %self.name, "a stored search provider key is sealed \
                    under another key (or none is set): set AGENTCHAT_SECRET_KEY to the key it \
                    was sealed with, or send the key again");
            }
            opened
        });
        Some(SearchProviderConfig {
            api_key: opened.or(self.api_key).map(SecretString::from),
            name: self.name,
            kind,
            base_url: self.base_url,
            price_per_query: Some(self.price_per_query),
            currency: self.currency,
            timeout_secs: u64::try_from(self.timeout_secs).unwrap_or(10),
        })
    }
}

/// The stored providers by name, keys opened with `key`.
pub async fn list(
    conn: &mut AsyncPgConnection,
    key: Option<&SealingKey>,
) -> diesel::QueryResult<Vec<SearchProviderConfig>> {
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT name, kind, base_url, api_key, api_key_sealed, price_per_query, currency, \
                timeout_secs, updated_at FROM search_providers ORDER BY name",
    )
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.into_config(key))
        .collect())
}

/// Creates or replaces the stored provider `p`.
pub async fn save(
    conn: &mut AsyncPgConnection,
    p: &SearchProviderConfig,
    key: Option<&SealingKey>,
) -> diesel::QueryResult<()> {
    let clear = p.api_key.as_ref().map(|k| k.expose_secret().to_owned());
    let (api_key, sealed) = match (clear, key) {
        (Some(k), Some(sealer)) => match sealer.seal(&k, &p.name) {
            Ok(s) => (None, Some(s)),
            Err(e) => {
                // No randomness to seal with: never fall back to clear text.
                tracing::error!(provider = %p.name, error = %e, "could not seal a search key");
                (None, None)
            }
        },
        (clear, _) => (clear, None),
    };
    let timeout = i32::try_from(p.timeout_secs).unwrap_or(10);
    diesel::sql_query(
        "INSERT INTO search_providers (name, kind, base_url, api_key, api_key_sealed, \
                                       price_per_query, currency, timeout_secs) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (name) DO UPDATE SET kind = $2, base_url = $3, api_key = $4, \
             api_key_sealed = $5, price_per_query = $6, currency = $7, timeout_secs = $8, \
             updated_at = now()",
    )
    .bind::<Text, _>(&p.name)
    .bind::<Text, _>(p.kind.as_str())
    .bind::<Text, _>(p.base_url.trim())
    .bind::<Nullable<Text>, _>(api_key)
    .bind::<Nullable<Text>, _>(sealed)
    .bind::<Numeric, _>(p.price_per_query.unwrap_or(Decimal::ZERO))
    .bind::<Text, _>(&p.currency)
    .bind::<Integer, _>(timeout)
    .execute(conn)
    .await
    .map(drop)
}

/// Removes the stored provider `name`; whether there was one.
pub async fn delete(conn: &mut AsyncPgConnection, name: &str) -> diesel::QueryResult<bool> {
    diesel::sql_query("DELETE FROM search_providers WHERE name = $1")
        .bind::<Text, _>(name)
        .execute(conn)
        .await
        .map(|n| n > 0)
}
