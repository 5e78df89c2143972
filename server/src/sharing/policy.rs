//! Who may make public links: roles an admin allowed (`roles.can_share_public`; admins by
//! default). Org links need no permission: they never leave the server's own accounts.

use diesel::sql_types::{Bool, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

#[derive(QueryableByName)]
struct Allowed {
    #[diesel(sql_type = Bool)]
    allowed: bool,
}

#[derive(QueryableByName)]
struct RoleName {
    #[diesel(sql_type = Text)]
    name: String,
}

/// Whether `user`'s current role may make public links (false for an unknown user).
pub async fn user_may_share_publicly(
    conn: &mut AsyncPgConnection,
    user: Uuid,
) -> diesel::QueryResult<bool> {
    let row: Option<Allowed> = diesel::sql_query(
        "SELECT r.can_share_public AS allowed FROM users u JOIN roles r ON r.name = u.role \
          WHERE u.id = $1",
    )
    .bind::<SqlUuid, _>(user)
    .get_result(conn)
    .await
    .optional()?;
    Ok(row.is_some_and(|r| r.allowed))
}

/// The roles that may make public links, by name.
pub async fn public_roles(conn: &mut AsyncPgConnection) -> diesel::QueryResult<Vec<String>> {
    let rows: Vec<RoleName> =
        diesel::sql_query("SELECT name FROM roles WHERE can_share_public ORDER BY name")
            .load(conn)
            .await?;
    Ok(rows.into_iter().map(|r| r.name).collect())
}

/// Whether role `name` may make public links (false for an unknown role).
pub async fn role_may_share_publicly(
    conn: &mut AsyncPgConnection,
    name: &str,
) -> diesel::QueryResult<bool> {
    let row: Option<Allowed> =
        diesel::sql_query("SELECT can_share_public AS allowed FROM roles WHERE name = $1")
            .bind::<Text, _>(name)
            .get_result(conn)
            .await
            .optional()?;
    Ok(row.is_some_and(|r| r.allowed))
}

/// Lets role `name` make public links, or stops it. Links its users made stay, but a public
/// one is not shown while its owner's role may not share publicly (see `read`).
pub async fn set_role_may_share_publicly(
    conn: &mut AsyncPgConnection,
    name: &str,
    allowed: bool,
) -> diesel::QueryResult<()> {
    diesel::sql_query("UPDATE roles SET can_share_public = $2 WHERE name = $1")
        .bind::<Text, _>(name)
        .bind::<Bool, _>(allowed)
        .execute(conn)
        .await
        .map(drop)
}
