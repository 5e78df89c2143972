//! `/scim/v2/Users` and `/scim/v2/Groups`: SCIM 2.0 provisioning by the identity provider,
//! with the bearer token of `scim.token` (compared as a digest, in constant time). 404
//! while SCIM is off.

use std::future::{ready, Ready};

use actix_web::http::{header, StatusCode};
use actix_web::{dev::Payload, web, FromRequest, HttpRequest, HttpResponse};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use uuid::Uuid;

use crate::scim::wire::{ErrorOut, GroupIn, GroupOut, ListResponse, PatchRequest, UserIn, UserOut};
use crate::scim::{filter, groups, page, users, ScimError, CONTENT_TYPE};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/scim/v2")
            .route("/Users", web::get().to(list_users))
            .route("/Users", web::post().to(create_user))
            .route("/Users/{id}", web::get().to(get_user))
            .route("/Users/{id}", web::put().to(replace_user))
            .route("/Users/{id}", web::patch().to(patch_user))
            .route("/Users/{id}", web::delete().to(delete_user))
            .route("/Groups", web::get().to(list_groups))
            .route("/Groups", web::post().to(create_group))
            .route("/Groups/{id}", web::get().to(get_group))
            .route("/Groups/{id}", web::put().to(replace_group))
            .route("/Groups/{id}", web::patch().to(patch_group))
            .route("/Groups/{id}", web::delete().to(delete_group)),
    );
}

/// A request from the identity provider (the SCIM bearer token).
pub struct ScimClient;

impl FromRequest for ScimClient {
    type Error = ScimError;
    type Future = Ready<Result<Self, ScimError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let Some(state) = req.app_data::<web::Data<AppState>>() else {
            return ready(Err(ScimError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
                "no state",
            )));
        };
        if !state.sso.scim_enabled() {
            return ready(Err(ScimError::new(
                StatusCode::NOT_FOUND,
                None,
                "SCIM provisioning is not enabled on this server",
            )));
        }
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        ready(match presented {
            Some(t) if state.sso.scim_token_matches(t) => Ok(ScimClient),
            _ => Err(ScimError::new(
                StatusCode::UNAUTHORIZED,
                None,
                "a valid SCIM bearer token is required",
            )),
        })
    }
}

/// A JSON body (`application/scim+json` or `application/json`), bounded by the body limit.
fn body<T: DeserializeOwned>(req: &HttpRequest, bytes: &web::Bytes) -> Result<T, ScimError> {
    let limit = req
        .app_data::<web::Data<AppState>>()
        .map_or(1024 * 1024, |s| s.settings.max_body_bytes);
    if bytes.len() > limit {
        return Err(ScimError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            "the body is too large",
        ));
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence != CONTENT_TYPE && essence != "application/json" {
        return Err(ScimError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "send application/scim+json",
        ));
    }
    if crate::domain::text::may_hold_nul(bytes) {
        let value = serde_json::from_slice::<serde_json::Value>(bytes).ok();
        if let Some(field) = value.as_ref().and_then(crate::domain::text::nul_in_json) {
            return Err(ScimError::bad(
                "invalidValue",
                format!("`{field}` contains a NUL character, which cannot be stored"),
            ));
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        ScimError::bad(
            "invalidSyntax",
            format!("invalid body at `{}`: {}", e.path(), e.inner()),
        )
    })
}

fn ok<T: serde::Serialize>(status: StatusCode, value: &T) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(CONTENT_TYPE)
        .json(value)
}

fn id_of(raw: &str, what: &str) -> Result<Uuid, ScimError> {
    raw.parse().map_err(|_| ScimError::not_found(what))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    /// `attribute eq "value"` on userName, externalId, displayName (groups) or id.
    filter: Option<String>,
    /// 1-based.
    start_index: Option<i64>,
    count: Option<i64>,
    /// `members` leaves group members out.
    excluded_attributes: Option<String>,
}

impl ListQuery {
    fn with_members(&self) -> bool {
        !self.excluded_attributes.as_deref().is_some_and(|a| {
            a.split(',')
                .any(|x| x.trim().eq_ignore_ascii_case("members"))
        })
    }
}

/// Provisioned users (SCIM `ListResponse`).
#[utoipa::path(get, path = "/scim/v2/Users", tag = "scim", params(ListQuery), security(("scim_token" = [])),
    responses((status = 200, description = "ListResponse of User", content_type = "application/scim+json", body = ListResponse<UserOut>)))]
async fn list_users(
    state: web::Data<AppState>,
    _c: ScimClient,
    q: web::Query<ListQuery>,
) -> Result<HttpResponse, ScimError> {
    let m = filter::parse(q.filter.as_deref())?;
    let (offset, limit) = page(q.start_index, q.count);
    Ok(ok(
        StatusCode::OK,
        &users::list(&state, &m, offset, limit).await?,
    ))
}

/// Provisions an account.
#[utoipa::path(post, path = "/scim/v2/Users", tag = "scim", security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 201, description = "The User", content_type = "application/scim+json", body = UserOut),
        (status = 409, description = "userName taken (scimType uniqueness)", content_type = "application/scim+json", body = ErrorOut)))]
async fn create_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let input: UserIn = body(&req, &bytes)?;
    Ok(ok(
        StatusCode::CREATED,
        &users::create(&state, input).await?,
    ))
}

/// One provisioned user.
#[utoipa::path(get, path = "/scim/v2/Users/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    responses((status = 200, description = "The User", content_type = "application/scim+json", body = UserOut)))]
async fn get_user(
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
) -> Result<HttpResponse, ScimError> {
    Ok(ok(
        StatusCode::OK,
        &users::get(&state, id_of(&id, "user")?).await?,
    ))
}

/// Replaces a user's attributes (`active: false` deactivates it).
#[utoipa::path(put, path = "/scim/v2/Users/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "The User", content_type = "application/scim+json", body = UserOut)))]
async fn replace_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let id = id_of(&id, "user")?;
    let input: UserIn = body(&req, &bytes)?;
    Ok(ok(
        StatusCode::OK,
        &users::replace(&state, id, input).await?,
    ))
}

/// PATCH operations (`replace active false` deactivates: sessions and turns end at once).
#[utoipa::path(patch, path = "/scim/v2/Users/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "The User", content_type = "application/scim+json", body = UserOut)))]
async fn patch_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let id = id_of(&id, "user")?;
    let input: PatchRequest = body(&req, &bytes)?;
    Ok(ok(
        StatusCode::OK,
        &users::patch(&state, id, &input.operations).await?,
    ))
}

/// Deprovisions: the account is disabled and no longer listed.
#[utoipa::path(delete, path = "/scim/v2/Users/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    responses((status = 204, description = "Deprovisioned")))]
async fn delete_user(
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
) -> Result<HttpResponse, ScimError> {
    users::delete(&state, id_of(&id, "user")?).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Provisioned groups (SCIM `ListResponse`).
#[utoipa::path(get, path = "/scim/v2/Groups", tag = "scim", params(ListQuery), security(("scim_token" = [])),
    responses((status = 200, description = "ListResponse of Group", content_type = "application/scim+json", body = ListResponse<GroupOut>)))]
async fn list_groups(
    state: web::Data<AppState>,
    _c: ScimClient,
    q: web::Query<ListQuery>,
) -> Result<HttpResponse, ScimError> {
    let m = filter::parse(q.filter.as_deref())?;
    let (offset, limit) = page(q.start_index, q.count);
    Ok(ok(
        StatusCode::OK,
        &groups::list(&state, &m, offset, limit, q.with_members()).await?,
    ))
}

/// Creates a group.
#[utoipa::path(post, path = "/scim/v2/Groups", tag = "scim", security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 201, description = "The Group", content_type = "application/scim+json", body = GroupOut),
        (status = 409, description = "displayName taken (scimType uniqueness)", content_type = "application/scim+json", body = ErrorOut)))]
async fn create_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let input: GroupIn = body(&req, &bytes)?;
    Ok(ok(
        StatusCode::CREATED,
        &groups::create(&state, input).await?,
    ))
}

/// One group with its members.
#[utoipa::path(get, path = "/scim/v2/Groups/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    responses((status = 200, description = "The Group", content_type = "application/scim+json", body = GroupOut)))]
async fn get_group(
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
    q: web::Query<ListQuery>,
) -> Result<HttpResponse, ScimError> {
    Ok(ok(
        StatusCode::OK,
        &groups::get(&state, id_of(&id, "group")?, q.with_members()).await?,
    ))
}

/// Replaces a group's name and members.
#[utoipa::path(put, path = "/scim/v2/Groups/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "The Group", content_type = "application/scim+json", body = GroupOut)))]
async fn replace_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let id = id_of(&id, "group")?;
    let input: GroupIn = body(&req, &bytes)?;
    Ok(ok(
        StatusCode::OK,
        &groups::replace(&state, id, input).await?,
    ))
}

/// Membership `add` / `remove` / `replace`, renames.
#[utoipa::path(patch, path = "/scim/v2/Groups/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 204, description = "Applied")))]
async fn patch_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ScimError> {
    let id = id_of(&id, "group")?;
    let input: PatchRequest = body(&req, &bytes)?;
    groups::patch(&state, id, &input.operations).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Deletes a group.
#[utoipa::path(delete, path = "/scim/v2/Groups/{id}", tag = "scim", params(("id" = String, Path)), security(("scim_token" = [])),
    responses((status = 204, description = "Deleted")))]
async fn delete_group(
    state: web::Data<AppState>,
    _c: ScimClient,
    id: web::Path<String>,
) -> Result<HttpResponse, ScimError> {
    groups::delete(&state, id_of(&id, "group")?).await?;
    Ok(HttpResponse::NoContent().finish())
}
