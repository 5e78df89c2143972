//! Storing a job's chunks (not embedded yet) with the file's text, in one commit guarded by
//! the job's lease.

use diesel::sql_types::{Array, Integer, Text, Uuid as SqlUuid};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use super::chunking::Piece;
use super::embed_step::Job;
use super::Knowledge;

pub(super) async fn store_chunks(
    k: &Knowledge,
    conn: &mut AsyncPgConnection,
    job: &Job,
    text: &str,
    pieces: &[Piece],
) -> diesel::QueryResult<()> {
    let text = crate::db::pg_safe_text(text).into_owned();
    let starts: Vec<i32> = pieces.iter().map(|p| to_i32(p.start)).collect();
    let ends: Vec<i32> = pieces.iter().map(|p| to_i32(p.end)).collect();
    let texts: Vec<String> = pieces
        .iter()
        .map(|p| crate::db::pg_safe_text(&p.text).into_owned())
        .collect();
    let (id, generation, me, model) = (job.id, job.generation, k.process_id, &k.model.name);
    conn.transaction::<(), diesel::result::Error, _>(|conn| {
        let (text, starts, ends, texts) = (&text, &starts, &ends, &texts);
        async move {
            let owned = diesel::sql_query(
                "UPDATE documents SET text = $4, state = 'embedding', progress = 0.1, \
                        updated_at = now() \
                  WHERE id = $1 AND generation = $2 AND lease_owner = $3",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Integer, _>(generation)
            .bind::<SqlUuid, _>(me)
            .bind::<Text, _>(text)
            .execute(conn)
            .await?;
            if owned == 0 {
                return Ok(());
            }
            diesel::sql_query(
                "INSERT INTO chunks (document_id, collection_id, generation, ord, byte_start, \
                                     byte_end, text, embedding_model) \
                 SELECT $1, d.collection_id, $2, r.n - 1, r.s, r.e, r.t, $6 \
                   FROM documents d, unnest($3::int4[], $4::int4[], $5::text[]) \
                        WITH ORDINALITY AS r (s, e, t, n) \
                  WHERE d.id = $1",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Integer, _>(generation)
            .bind::<Array<Integer>, _>(starts)
            .bind::<Array<Integer>, _>(ends)
            .bind::<Array<Text>, _>(texts)
            .bind::<Text, _>(model)
            .execute(conn)
            .await?;
            Ok(())
        }
        .scope_boxed()
    })
    .await
}

fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
