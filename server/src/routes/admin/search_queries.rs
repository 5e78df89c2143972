//! `/api/admin/search-queries`: the web search queries' audit rows, as they left the server.

use actix_web::{web, HttpResponse};
use diesel::sql_types::{
    Array, BigInt, Bool, Nullable, Numeric, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::auth::AdminUser;
use crate::db;
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/search-queries", web::get().to(queries));
}

/// Filters of the query audit.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SearchQueryFilter {
    /// Only this user's queries.
    user_id: Option<uuid::Uuid>,
    /// Most rows (1-500, default 100), newest first.
    limit: Option<i64>,
}

/// One query as it left the server.
#[derive(Serialize, QueryableByName, utoipa::ToSchema)]
pub struct SearchQueryRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    user_id: uuid::Uuid,
    #[diesel(sql_type = Text)]
    username: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    conversation_id: Option<uuid::Uuid>,
    #[diesel(sql_type = Text)]
    provider: String,
    /// The query as sent (after personal data was removed).
    #[diesel(sql_type = Text)]
    query_sent: String,
    /// Whether personal data was removed from it.
    #[diesel(sql_type = Bool)]
    stripped: bool,
    /// `ok`, `error`, `refused` (never sent) or `pending`.
    #[diesel(sql_type = Text)]
    outcome: String,
    #[diesel(sql_type = Nullable<Text>)]
    error: Option<String>,
    #[diesel(sql_type = Array<Text>)]
    result_urls: Vec<String>,
    /// An exact decimal string.
    #[diesel(sql_type = Numeric)]
    #[schema(value_type = String)]
    #[serde(serialize_with = "crate::domain::pricing::decimal_text::serialize")]
    cost: Decimal,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Timestamptz)]
    created_at: chrono::DateTime<chrono::Utc>,
}

/// The query audit, `{items: [...]}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SearchQueryList {
    items: Vec<SearchQueryRow>,
}

#[utoipa::path(get, path = "/api/admin/search-queries", tag = "admin", params(SearchQueryFilter),
    responses((status = 200, description = "Web search queries, newest first", body = SearchQueryList)))]
pub async fn queries(
    state: web::Data<AppState>,
    _admin: AdminUser,
    filter: web::Query<SearchQueryFilter>,
) -> Result<HttpResponse, ApiError> {
    let limit = filter.limit.unwrap_or(100).clamp(1, 500);
    let mut conn = db::conn(&state.pool).await?;
    let items: Vec<SearchQueryRow> = diesel::sql_query(
        "SELECT q.id, q.user_id, u.username, q.conversation_id, q.provider, q.query_sent, \
                q.stripped, q.outcome, q.error, q.result_urls, q.cost, q.currency, q.created_at \
           FROM web_search_queries q JOIN users u ON u.id = q.user_id \
          WHERE ($1::uuid IS NULL OR q.user_id = $1) \
          ORDER BY q.id DESC LIMIT $2",
    )
    .bind::<Nullable<SqlUuid>, _>(filter.user_id)
    .bind::<BigInt, _>(limit)
    .load(&mut conn)
    .await?;
    Ok(HttpResponse::Ok().json(SearchQueryList { items }))
}
