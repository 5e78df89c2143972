//! What SCIM provisioning stores: the provider's view of an account (`scim_users`, joined
//! with `users` for `active`), and its groups with their members.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::lower;
use crate::db::schema::{scim_group_members as gm, scim_groups as g, scim_users as su, users};

/// A provisioned account.
#[derive(Debug, Clone, Queryable)]
pub struct ScimUser {
    pub id: Uuid,
    pub user_name: String,
    pub external_id: Option<String>,
    pub display_name: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub email: Option<String>,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The provider-side attributes of an account (everything but `active`).
#[derive(Debug, Clone, Default, AsChangeset, Insertable)]
#[diesel(table_name = su, treat_none_as_null = true)]
pub struct ScimUserFields {
    pub user_name: String,
    pub external_id: Option<String>,
    pub display_name: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub email: Option<String>,
}

/// What a list asks for: one attribute equal to a value, or everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    All,
    UserName(String),
    ExternalId(String),
    DisplayName(String),
    Id(Uuid),
}

type UserColumns = (
    su::user_id,
    su::user_name,
    su::external_id,
    su::display_name,
    su::given_name,
    su::family_name,
    su::email,
    users::disabled,
    su::created_at,
    su::updated_at,
);

const USER_COLUMNS: UserColumns = (
    su::user_id,
    su::user_name,
    su::external_id,
    su::display_name,
    su::given_name,
    su::family_name,
    su::email,
    users::disabled,
    su::created_at,
    su::updated_at,
);

pub async fn find_user(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<ScimUser>> {
    su::table
        .inner_join(users::table)
        .filter(su::user_id.eq(id))
        .select(USER_COLUMNS)
        .first(conn)
        .await
        .optional()
}

/// The provisioned account whose `externalId` is one of `ids` (single sign-on links them).
pub async fn find_by_external_id(
    conn: &mut AsyncPgConnection,
    ids: &[&str],
) -> QueryResult<Option<Uuid>> {
    su::table
        .filter(su::external_id.eq_any(ids))
        .select(su::user_id)
        .first(conn)
        .await
        .optional()
}

/// One page of provisioned accounts matching `m`, and how many match in all.
pub async fn list_users(
    conn: &mut AsyncPgConnection,
    m: &Match,
    offset: i64,
    limit: i64,
) -> QueryResult<(i64, Vec<ScimUser>)> {
    let filtered = || {
        let q = su::table.inner_join(users::table).into_boxed();
        match m {
            Match::All | Match::DisplayName(_) => q,
            Match::UserName(v) => q.filter(lower(su::user_name).eq(v.to_lowercase())),
            Match::ExternalId(v) => q.filter(su::external_id.eq(v.clone())),
            Match::Id(id) => q.filter(su::user_id.eq(*id)),
        }
    };
    let total = filtered().count().get_result(conn).await?;
    let rows = filtered()
        .order((su::created_at.asc(), su::user_id.asc()))
        .offset(offset)
        .limit(limit)
        .select(USER_COLUMNS)
        .load(conn)
        .await?;
    Ok((total, rows))
}

pub async fn insert_user(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    fields: &ScimUserFields,
) -> QueryResult<()> {
    diesel::insert_into(su::table)
        .values((su::user_id.eq(user_id), fields))
        .execute(conn)
        .await
        .map(|_| ())
}

pub async fn update_user(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    fields: &ScimUserFields,
) -> QueryResult<()> {
    diesel::update(su::table.find(user_id))
        .set((fields, su::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Forgets the provider's record of the account (the account itself stays, disabled, with
/// its history); it leaves every group.
pub async fn delete_user(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<bool> {
    diesel::delete(gm::table.filter(gm::user_id.eq(user_id)))
        .execute(conn)
        .await?;
    Ok(diesel::delete(su::table.find(user_id))
        .execute(conn)
        .await?
        > 0)
}

/// A provisioned group.
#[derive(Debug, Clone, Queryable)]
pub struct ScimGroup {
    pub id: Uuid,
    pub display_name: String,
    pub external_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const GROUP_COLUMNS: (
    g::id,
    g::display_name,
    g::external_id,
    g::created_at,
    g::updated_at,
) = (
    g::id,
    g::display_name,
    g::external_id,
    g::created_at,
    g::updated_at,
);

pub async fn find_group(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<ScimGroup>> {
    g::table
        .find(id)
        .select(GROUP_COLUMNS)
        .first(conn)
        .await
        .optional()
}

pub async fn list_groups(
    conn: &mut AsyncPgConnection,
    m: &Match,
    offset: i64,
    limit: i64,
) -> QueryResult<(i64, Vec<ScimGroup>)> {
    let filtered = || {
        let q = g::table.into_boxed();
        match m {
            Match::All | Match::UserName(_) => q,
            Match::DisplayName(v) => q.filter(lower(g::display_name).eq(v.to_lowercase())),
            Match::ExternalId(v) => q.filter(g::external_id.eq(v.clone())),
            Match::Id(id) => q.filter(g::id.eq(*id)),
        }
    };
    let total = filtered().count().get_result(conn).await?;
    let rows = filtered()
        .order((g::created_at.asc(), g::id.asc()))
        .offset(offset)
        .limit(limit)
        .select(GROUP_COLUMNS)
        .load(conn)
        .await?;
    Ok((total, rows))
}

pub async fn insert_group(
    conn: &mut AsyncPgConnection,
    display_name: &str,
    external_id: Option<&str>,
) -> QueryResult<ScimGroup> {
    diesel::insert_into(g::table)
        .values((
            g::id.eq(Uuid::new_v4()),
            g::display_name.eq(display_name),
            g::external_id.eq(external_id),
        ))
        .returning(GROUP_COLUMNS)
        .get_result(conn)
        .await
}

pub async fn update_group(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    display_name: &str,
    external_id: Option<&str>,
) -> QueryResult<()> {
    diesel::update(g::table.find(id))
        .set((
            g::display_name.eq(display_name),
            g::external_id.eq(external_id),
            g::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

pub async fn delete_group(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<bool> {
    Ok(diesel::delete(g::table.find(id)).execute(conn).await? > 0)
}

/// Members of a group: (account id, SCIM userName).
pub async fn members(
    conn: &mut AsyncPgConnection,
    group: Uuid,
) -> QueryResult<Vec<(Uuid, String)>> {
    gm::table
        .inner_join(su::table.on(su::user_id.eq(gm::user_id)))
        .filter(gm::group_id.eq(group))
        .order(su::user_name.asc())
        .select((gm::user_id, su::user_name))
        .load(conn)
        .await
}

/// Groups of an account: (group id, display name).
pub async fn groups_of(
    conn: &mut AsyncPgConnection,
    user: Uuid,
) -> QueryResult<Vec<(Uuid, String)>> {
    gm::table
        .inner_join(g::table)
        .filter(gm::user_id.eq(user))
        .order(g::display_name.asc())
        .select((g::id, g::display_name))
        .load(conn)
        .await
}

/// Adds the provisioned accounts among `ids` to the group; returns how many of `ids` are
/// not provisioned accounts (they are not added).
pub async fn add_members(
    conn: &mut AsyncPgConnection,
    group: Uuid,
    ids: &[Uuid],
) -> QueryResult<usize> {
    let known: Vec<Uuid> = su::table
        .filter(su::user_id.eq_any(ids))
        .select(su::user_id)
        .load(conn)
        .await?;
    let rows: Vec<_> = known
        .iter()
        .map(|u| (gm::group_id.eq(group), gm::user_id.eq(*u)))
        .collect();
    diesel::insert_into(gm::table)
        .values(rows)
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    diesel::update(g::table.find(group))
        .set(g::updated_at.eq(diesel::dsl::now))
        .execute(conn)
        .await?;
    Ok(ids.len() - known.len())
}

/// Removes `ids` from the group (`None`: everyone).
pub async fn remove_members(
    conn: &mut AsyncPgConnection,
    group: Uuid,
    ids: Option<&[Uuid]>,
) -> QueryResult<()> {
    match ids {
        Some(ids) => {
            diesel::delete(
                gm::table
                    .filter(gm::group_id.eq(group))
                    .filter(gm::user_id.eq_any(ids)),
            )
            .execute(conn)
            .await?
        }
        None => {
            diesel::delete(gm::table.filter(gm::group_id.eq(group)))
                .execute(conn)
                .await?
        }
    };
    diesel::update(g::table.find(group))
        .set(g::updated_at.eq(diesel::dsl::now))
        .execute(conn)
        .await
        .map(|_| ())
}
