//! A job's first step: the file's text extracted (in a limited child for PDFs and HTML,
//! cancelled when the job is lost), cut into chunks off the runtime, and stored with them in
//! one commit, before any is embedded.

use diesel::sql_types::{Integer, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::chunking;
use super::embed_step::Job;
use super::extract::{self, ExtractLimits};
use super::jobs::{set_progress, Stop};
use super::Knowledge;

#[derive(QueryableByName)]
struct Source {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    content: Vec<u8>,
}

/// Extracts the file's text and stores its chunks (not embedded yet) with it, in one commit.
pub(super) async fn extract_and_chunk(
    k: &Knowledge,
    conn: &mut AsyncPgConnection,
    job: &Job,
) -> Result<(), Stop> {
    let db = |e: diesel::result::Error| Stop::Pause(format!("database error: {e}"));
    set_progress(conn, k, job, "extracting", 0.02)
        .await
        .map_err(db)?;
    let source: Option<Source> = diesel::sql_query(
        "SELECT name, content FROM documents WHERE id = $1 AND generation = $2 \
           AND lease_owner = $3",
    )
    .bind::<SqlUuid, _>(job.id)
    .bind::<Integer, _>(job.generation)
    .bind::<SqlUuid, _>(k.process_id)
    .get_result(conn)
    .await
    .optional()
    .map_err(db)?;
    let Some(source) = source else {
        return Err(Stop::Lost);
    };
    let limits = ExtractLimits {
        max_text_bytes: k.settings.max_text_bytes,
        ..ExtractLimits::default()
    };
    let (tokens, overlap) = (k.settings.chunk_tokens, k.settings.chunk_overlap_tokens);
    let extractor = extract::Extractor::from_settings(&k.settings);
    let lost = super::job_watch::lost(conn, k, job);
    let extracted =
        match extract::extract_isolated(&source.name, source.content, &limits, &extractor, lost)
            .await
        {
            Ok(extracted) => extracted,
            Err(extract::ExtractError::Cancelled) => return Err(Stop::Lost),
            Err(e) => {
                return Err(Stop::Fail {
                    code: e.code(),
                    message: e.to_string(),
                })
            }
        };
    let made = tokio::task::spawn_blocking(move || {
        let pieces = chunking::chunk(&extracted.text, extracted.kind, tokens, overlap)
            .map_err(|e| ("chunking_failed", e))?;
        Ok::<_, (&'static str, String)>((extracted.text, pieces))
    })
    .await;
    let (text, pieces) = match made {
        Ok(Ok(made)) => made,
        Ok(Err((code, message))) => return Err(Stop::Fail { code, message }),
        Err(_) => {
            return Err(Stop::Fail {
                code: "extraction_failed",
                message: "the file could not be read".into(),
            })
        }
    };
    if pieces.is_empty() {
        return Err(Stop::Fail {
            code: "no_text",
            message: "the file has no text to index".into(),
        });
    }
    super::chunk_store::store_chunks(k, conn, job, &text, &pieces)
        .await
        .map_err(db)
}
