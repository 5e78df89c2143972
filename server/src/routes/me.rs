//! `GET /api/me`: who am I, which tools may I use, what budget is left.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AuthUser;
use crate::budget::Period;
use crate::db::{self, models::role, models::user};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/me", web::get().to(me));
}

async fn me(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let account = user::find(&mut conn, who.id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("this account no longer exists"))?;
    let role = role::find(&mut conn, &account.role).await?;
    let (tools, role_budget, period) = match role {
        Some(r) => (
            r.tools,
            r.token_budget,
            Period::parse(&r.budget_period).unwrap_or(Period::Month),
        ),
        None => (Vec::new(), None, Period::Month),
    };
    let limit = account.token_budget.or(role_budget);
    Ok(HttpResponse::Ok().json(json!({
        "id": account.id,
        "username": account.username,
        "role": account.role,
        "tools": tools,
        "budget": {
            "limit": limit,
            "used": 0,
            "reserved": 0,
            "period": period,
            "resets_at": period.resets_at(chrono::Utc::now()),
        }
    })))
}
