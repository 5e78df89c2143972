//! Whether this database can hold collections, decided once at start. pgvector is an
//! extension not every Postgres has: with it (0.8 or newer, for iterative index scans), the
//! `embedding` column and the HNSW index of the model in use are added here; without it
//! collections are off, the reason is logged and shown, and everything else works.

use diesel::sql_types::{Nullable, Text};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::config::KnowledgeSettings;

/// The oldest pgvector with iterative HNSW scans (a selective grant filter keeps recall).
const MIN_VERSION: (u32, u32) = (0, 8);

/// Serialises the schema step across replicas starting at once.
const SCHEMA_LOCK_KEY: i64 = 0x6b6e_6f77;

/// Whether collections can be used on this database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Ready {
        pgvector: String,
    },
    /// Why not, in words for an admin.
    Off(String),
}

#[derive(QueryableByName)]
struct Versions {
    #[diesel(sql_type = Nullable<Text>)]
    installed: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    available: Option<String>,
}

/// Checks for pgvector, creates the extension when it can be had, and adds the vector
/// column and the HNSW index for `dimensions`.
pub async fn prepare(
    conn: &mut AsyncPgConnection,
    settings: &KnowledgeSettings,
    dimensions: usize,
) -> Availability {
    if !settings.enabled {
        return Availability::Off(
            "Collections are turned off on this server (knowledge.enabled = false).".into(),
        );
    }
    match prepare_inner(conn, dimensions).await {
        Ok(a) => a,
        Err(e) => Availability::Off(format!(
            "Collections are off: preparing the database for them failed ({e})."
        )),
    }
}

async fn prepare_inner(
    conn: &mut AsyncPgConnection,
    dimensions: usize,
) -> diesel::QueryResult<Availability> {
    let v: Versions = diesel::sql_query(
        "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed, \
                (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available",
    )
    .get_result(conn)
    .await?;
    let version =
        match (v.installed, v.available) {
            (Some(installed), _) => installed,
            (None, None) => return Ok(Availability::Off(
                "Collections need the pgvector extension (0.8 or newer) on the database, which \
                 does not have it: install pgvector into this Postgres (or use a pgvector image) \
                 and restart the server."
                    .into(),
            )),
            (None, Some(available)) => {
                if let Err(e) = diesel::sql_query("CREATE EXTENSION IF NOT EXISTS vector")
                    .execute(conn)
                    .await
                {
                    return Ok(Availability::Off(format!(
                        "Collections need the pgvector extension: it is installed in Postgres \
                     ({available}) but the server could not enable it ({e}). Run \
                     `CREATE EXTENSION vector;` as a superuser in this database and restart."
                    )));
                }
                available
            }
        };
    if !at_least(&version, MIN_VERSION) {
        return Ok(Availability::Off(format!(
            "Collections need pgvector 0.8 or newer (iterative index scans); this database \
             has {version}: run `ALTER EXTENSION vector UPDATE;` after upgrading pgvector."
        )));
    }
    diesel::sql_query(format!("SELECT pg_advisory_lock({SCHEMA_LOCK_KEY})"))
        .execute(conn)
        .await?;
    let result = add_vectors(conn, dimensions).await;
    let _ = diesel::sql_query(format!("SELECT pg_advisory_unlock({SCHEMA_LOCK_KEY})"))
        .execute(conn)
        .await;
    result?;
    Ok(Availability::Ready { pgvector: version })
}

/// The `embedding` column (untyped: models of different lengths live side by side while a
/// collection is re-indexed) and a partial HNSW index per length.
async fn add_vectors(conn: &mut AsyncPgConnection, dimensions: usize) -> diesel::QueryResult<()> {
    diesel::sql_query("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding vector")
        .execute(conn)
        .await?;
    // `dimensions` is a validated number (1..=2000), never user text.
    diesel::sql_query(format!(
        "CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw_{dimensions} ON chunks \
         USING hnsw ((embedding::vector({dimensions})) vector_cosine_ops) \
         WHERE dims = {dimensions}"
    ))
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether `version` ("0.8.5") is at least `min`.
fn at_least(version: &str, min: (u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= min
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_compare() {
        assert!(super::at_least("0.8.5", (0, 8)));
        assert!(super::at_least("1.0", (0, 8)));
        assert!(!super::at_least("0.7.4", (0, 8)));
        assert!(!super::at_least("garbage", (0, 8)));
    }
}
