//! A user's preferences (theme, default model), kept on the account so they follow the user
//! to every browser.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::schema::users::dsl;

/// What `GET /api/me/preferences` shows.
#[derive(Debug, Clone, Queryable, serde::Serialize, utoipa::ToSchema)]
pub struct Preferences {
    /// `system` (follow the device), `light` or `dark`.
    pub theme: String,
    /// The model new conversations start with; `null`: the server's default.
    pub default_model: Option<String>,
}

/// A change; `None` leaves a field as it is.
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = crate::db::schema::users)]
pub struct PreferenceChanges {
    pub theme: Option<String>,
    /// `Some(None)` goes back to the server's default.
    pub default_model: Option<Option<String>>,
}

pub async fn find(conn: &mut AsyncPgConnection, user_id: Uuid) -> QueryResult<Option<Preferences>> {
    dsl::users
        .find(user_id)
        .select((dsl::theme, dsl::default_model))
        .first(conn)
        .await
        .optional()
}

pub async fn update(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    changes: &PreferenceChanges,
) -> QueryResult<Option<Preferences>> {
    diesel::update(dsl::users.find(user_id))
        .set(changes)
        .returning((dsl::theme, dsl::default_model))
        .get_result(conn)
        .await
        .optional()
}
