//! Single sign-on identities: the provider's (issuer, subject) of an account.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::schema::user_identities::dsl;

/// The account signed in as `subject` at `issuer`, if any.
pub async fn find_user(
    conn: &mut AsyncPgConnection,
    issuer: &str,
    subject: &str,
) -> QueryResult<Option<Uuid>> {
    dsl::user_identities
        .find((issuer, subject))
        .select(dsl::user_id)
        .first(conn)
        .await
        .optional()
}

/// Whether the account already has an identity at `issuer` (a SCIM account is linked once).
pub async fn has_identity_at(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    issuer: &str,
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        dsl::user_identities
            .filter(dsl::user_id.eq(user_id))
            .filter(dsl::issuer.eq(issuer)),
    ))
    .get_result(conn)
    .await
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    issuer: &str,
    subject: &str,
    user_id: Uuid,
) -> QueryResult<()> {
    diesel::insert_into(dsl::user_identities)
        .values((
            dsl::issuer.eq(issuer),
            dsl::subject.eq(subject),
            dsl::user_id.eq(user_id),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

pub async fn touch(conn: &mut AsyncPgConnection, issuer: &str, subject: &str) -> QueryResult<()> {
    diesel::update(dsl::user_identities.find((issuer, subject)))
        .set(dsl::last_login_at.eq(diesel::dsl::now))
        .execute(conn)
        .await
        .map(|_| ())
}
