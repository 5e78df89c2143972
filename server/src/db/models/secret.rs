//! Server-wide secrets generated once and shared by every replica.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::server_secrets::dsl;

/// Returns the secret called `name`, storing `generated` first if there is none yet.
/// Concurrent first starts agree: the first insert wins and everyone reads it back.
pub async fn get_or_create(
    conn: &mut AsyncPgConnection,
    name: &str,
    generated: Vec<u8>,
) -> QueryResult<Vec<u8>> {
    diesel::insert_into(dsl::server_secrets)
        .values((dsl::name.eq(name), dsl::value.eq(generated)))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    dsl::server_secrets
        .filter(dsl::name.eq(name))
        .select(dsl::value)
        .get_result(conn)
        .await
}
