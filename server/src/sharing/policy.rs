//! Who may make public links: roles an admin allowed (`roles.can_share_public`; admins by
//! default). Org links need no permission: they never leave the server's own accounts.

use diesel::{ExpressionMethods, JoinOnDsl, OptionalExtension, QueryDsl};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::schema::{roles, users};

/// Whether `user`'s current role may make public links (false for an unknown user).
pub async fn user_may_share_publicly(
    conn: &mut AsyncPgConnection,
    user: Uuid,
) -> diesel::QueryResult<bool> {
    let allowed: Option<bool> = users::table
        .inner_join(roles::table.on(roles::name.eq(users::role)))
        .filter(users::id.eq(user))
        .select(roles::can_share_public)
        .get_result(conn)
        .await
        .optional()?;
    Ok(allowed.unwrap_or(false))
}

/// The roles that may make public links, by name.
pub async fn public_roles(conn: &mut AsyncPgConnection) -> diesel::QueryResult<Vec<String>> {
    roles::table
        .filter(roles::can_share_public)
        .order(roles::name)
        .select(roles::name)
        .load(conn)
        .await
}

/// Whether role `name` may make public links (false for an unknown role).
pub async fn role_may_share_publicly(
    conn: &mut AsyncPgConnection,
    name: &str,
) -> diesel::QueryResult<bool> {
    let allowed: Option<bool> = roles::table
        .find(name)
        .select(roles::can_share_public)
        .get_result(conn)
        .await
        .optional()?;
    Ok(allowed.unwrap_or(false))
}

/// Lets role `name` make public links, or stops it. Links its users made stay, but a public
/// one is not shown while its owner's role may not share publicly (see `read`).
pub async fn set_role_may_share_publicly(
    conn: &mut AsyncPgConnection,
    name: &str,
    allowed: bool,
) -> diesel::QueryResult<()> {
    diesel::update(roles::table.find(name))
        .set(roles::can_share_public.eq(allowed))
        .execute(conn)
        .await
        .map(drop)
}
