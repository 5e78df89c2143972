//! `/api/knowledge` (whether collections are on here) and `/api/collections`: collections,
//! their sharing with roles, and the collections a conversation searches. The SQL and its
//! ownership checks are `crate::knowledge`'s; files are in `collection_files.rs`.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::answers::Items;
use crate::auth::AuthUser;
use crate::db::models::admin_change::{self, NewChange};
use crate::error::ApiError;
use crate::extract::Json;
use crate::knowledge::collections::{self, Caller, Collection};
use crate::knowledge::documents::FileView;
use crate::knowledge::pins::Pinned;
use crate::knowledge::quota::Storage;
use crate::knowledge::search::Hit;
use crate::knowledge::{documents, extract, Availability};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/knowledge", web::get().to(status))
        .route("/knowledge/search", web::get().to(search))
        .route("/collections", web::get().to(list))
        .route("/collections", web::post().to(create))
        .route("/collections/{id}", web::get().to(get))
        .route("/collections/{id}", web::patch().to(update))
        .route("/collections/{id}", web::delete().to(delete))
        .route("/collections/{id}/grants", web::put().to(grants))
        .route("/conversations/{id}/collections", web::get().to(pins))
        .route("/conversations/{id}/collections", web::put().to(set_pins));
}

/// An admin trail row about collection `c` (named with its owner, whose it is).
fn trail(who: &AuthUser, kind: &'static str, c: &collections::Collection) -> NewChange {
    let target = format!("{} (of {})", c.view.name, c.view.owner_name);
    NewChange::by(who, kind, target).id(c.view.id)
}

pub(super) fn caller(who: &AuthUser) -> Caller {
    Caller {
        id: who.id,
        admin: who.is_admin(),
    }
}

/// `GET /api/knowledge`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct KnowledgeStatus {
    available: bool,
    /// Why collections are off (for an admin), when they are.
    reason: Option<String>,
    embedding_model: String,
    max_file_bytes: usize,
    /// The file extensions ingestion reads.
    #[schema(value_type = Vec<String>)]
    accepted: &'static [&'static str],
}

/// `GET /api/collections`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CollectionList {
    /// Each with the `roles` it is shared with.
    items: Vec<Collection>,
    /// The bytes the caller's uploaded files take, and their quota (0: none).
    storage: Storage,
}

/// A collection with its files and their ingestion state.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CollectionDetail {
    #[serde(flatten)]
    collection: Collection,
    files: Vec<FileView>,
}

/// `GET /api/knowledge/search`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SearchResults {
    results: Vec<Hit>,
}

/// Whether collections can be used on this server, and with what.
#[utoipa::path(get, path = "/api/knowledge", tag = "knowledge",
    responses((status = 200, description = "Availability, embedding model and file limits", body = KnowledgeStatus)))]
async fn status(state: web::Data<AppState>, _who: AuthUser) -> HttpResponse {
    let k = &state.knowledge;
    let (available, reason) = match &k.availability {
        Availability::Ready { .. } => (true, None),
        Availability::Off(reason) => (false, Some(reason.clone())),
    };
    HttpResponse::Ok().json(KnowledgeStatus {
        available,
        reason,
        embedding_model: k.model.name.clone(),
        max_file_bytes: k.settings.max_file_bytes,
        accepted: extract::ACCEPTED_EXTENSIONS,
    })
}

/// Which collections to list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// An admin's `true`: every collection on the server (metadata), to share any of them.
    #[serde(default)]
    all: bool,
}

/// The collections the caller may read (an admin's `?all=true`: every one).
#[utoipa::path(get, path = "/api/collections", tag = "knowledge", params(ListQuery), responses(
    (status = 200, description = "`{items: [Collection], storage: Storage}`: each collection with the `roles` it is shared with; storage is the bytes the caller's uploaded files take and their quota (0: none)", body = CollectionList),
    (status = 503, description = "Collections are off here (`knowledge_unavailable`)", body = crate::error::ErrorBody)))]
async fn list(
    state: web::Data<AppState>,
    who: AuthUser,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let items = collections::list(&mut conn, &caller(&who), query.all).await?;
    let storage = Storage {
        used_bytes: crate::knowledge::quota::used(&mut conn, who.id).await?,
        limit_bytes: state.knowledge.settings.user_quota_bytes,
    };
    Ok(HttpResponse::Ok().json(CollectionList { items, storage }))
}

/// A new collection.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCollection {
    #[schema(min_length = 1, max_length = 100)]
    name: String,
    #[serde(default)]
    #[schema(max_length = 2000)]
    description: String,
}

/// Creates a personal collection.
#[utoipa::path(post, path = "/api/collections", tag = "knowledge", request_body = NewCollection, responses(
    (status = 201, description = "The collection", body = crate::knowledge::collections::Collection),
    (status = 400, description = "Invalid name or description", body = crate::error::ErrorBody),
    (status = 409, description = "A collection of that name exists (`collection_exists`), or the limit is reached", body = crate::error::ErrorBody),
    (status = 503, description = "Collections are off here", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    who: AuthUser,
    Json(body): Json<NewCollection>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let max = state.knowledge.settings.max_collections_per_user;
    let c =
        collections::create(&mut conn, &caller(&who), &body.name, &body.description, max).await?;
    Ok(HttpResponse::Created().json(c))
}

/// A collection with its files and their ingestion state (an admin sees any one's; its
/// passages stay behind the grants).
#[utoipa::path(get, path = "/api/collections/{id}", tag = "knowledge", params(("id" = Uuid, Path)), responses(
    (status = 200, description = "The collection, the `roles` it is shared with, and `files`", body = CollectionDetail),
    (status = 404, description = "No such collection (or not yours to read)", body = crate::error::ErrorBody)))]
async fn get(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let collection = collections::metadata(&mut conn, &caller(&who), *id).await?;
    let files = documents::list(&mut conn, *id).await?;
    Ok(HttpResponse::Ok().json(CollectionDetail { collection, files }))
}

/// A new name or description.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionPatch {
    #[schema(min_length = 1, max_length = 100)]
    name: Option<String>,
    #[schema(max_length = 2000)]
    description: Option<String>,
}

/// Renames or re-describes a collection (its owner, or an admin).
#[utoipa::path(patch, path = "/api/collections/{id}", tag = "knowledge", params(("id" = Uuid, Path)),
    request_body = CollectionPatch, responses(
    (status = 200, description = "The collection", body = crate::knowledge::collections::Collection),
    (status = 403, description = "Not the owner", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection", body = crate::error::ErrorBody),
    (status = 409, description = "You already have a collection of that name (`collection_exists`)", body = crate::error::ErrorBody)))]
async fn update(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<CollectionPatch>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let before = collections::governed(&mut conn, &caller(&who), *id).await?;
    let c = collections::update(
        &mut conn,
        &caller(&who),
        *id,
        body.name.as_deref(),
        body.description.as_deref(),
    )
    .await?;
    if !before.mine {
        let text = |c: &collections::Collection| json!({ "name": c.view.name, "description": c.view.description });
        let change = trail(&who, "collection.update", &c)
            .before(text(&before))
            .after(text(&c));
        admin_change::record(&mut conn, change).await?;
    }
    Ok(HttpResponse::Ok().json(c))
}

/// Deletes a collection with its files and chunks.
#[utoipa::path(delete, path = "/api/collections/{id}", tag = "knowledge", params(("id" = Uuid, Path)), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not the owner", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection", body = crate::error::ErrorBody)))]
async fn delete(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let before = collections::governed(&mut conn, &caller(&who), *id).await?;
    collections::delete(&mut conn, &caller(&who), *id).await?;
    if !before.mine {
        let change = trail(&who, "collection.delete", &before)
            .before(json!({ "name": before.view.name, "roles": before.view.roles }));
        admin_change::record(&mut conn, change).await?;
    }
    Ok(HttpResponse::NoContent().finish())
}

/// The roles a collection is shared with.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    #[serde(default)]
    #[schema(max_items = 100)]
    roles: Vec<String>,
}

/// Shares a collection with exactly these roles (admins only).
#[utoipa::path(put, path = "/api/collections/{id}/grants", tag = "knowledge", params(("id" = Uuid, Path)),
    request_body = Grants, responses(
    (status = 200, description = "The collection", body = crate::knowledge::collections::Collection),
    (status = 400, description = "An unknown role", body = crate::error::ErrorBody),
    (status = 403, description = "Not an admin", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection", body = crate::error::ErrorBody)))]
async fn grants(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<Grants>,
) -> Result<HttpResponse, ApiError> {
    if !who.is_admin() {
        return Err(ApiError::forbidden(
            "only an admin may share a collection with roles",
        ));
    }
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let before = collections::metadata(&mut conn, &caller(&who), *id).await?;
    let c = collections::set_grants(&mut conn, &caller(&who), *id, &body.roles).await?;
    let change = trail(&who, "collection.share", &c)
        .before(json!({ "roles": before.view.roles }))
        .after(json!({ "roles": c.view.roles }));
    admin_change::record(&mut conn, change).await?;
    Ok(HttpResponse::Ok().json(c))
}

/// The collections a conversation searches by default.
#[utoipa::path(get, path = "/api/conversations/{id}/collections", tag = "knowledge", params(("id" = Uuid, Path)), responses(
    (status = 200, description = "The pinned collections", body = Items<Pinned>),
    (status = 404, description = "No such conversation", body = crate::error::ErrorBody)))]
async fn pins(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let items = crate::knowledge::pins::pins(&mut conn, &caller(&who), *id).await?;
    Ok(HttpResponse::Ok().json(Items::of(items)))
}

/// Collections to pin.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    #[serde(default)]
    #[schema(max_items = 50)]
    collections: Vec<Uuid>,
}

/// Pins exactly these collections to the conversation.
#[utoipa::path(put, path = "/api/conversations/{id}/collections", tag = "knowledge", params(("id" = Uuid, Path)),
    request_body = Pins, responses(
    (status = 200, description = "The pinned collections", body = Items<Pinned>),
    (status = 400, description = "Too many", body = crate::error::ErrorBody),
    (status = 404, description = "No such conversation or collection", body = crate::error::ErrorBody)))]
async fn set_pins(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<Pins>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let mut conn = state.pool.get().await?;
    let items =
        crate::knowledge::pins::set_pins(&mut conn, &caller(&who), *id, &body.collections).await?;
    Ok(HttpResponse::Ok().json(Items::of(items)))
}

/// A search of the caller's collections.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for (at most 1000 characters; none: no results).
    #[serde(default)]
    q: String,
    /// Only this collection.
    collection: Option<Uuid>,
    /// Passages to return (1-20, default 5).
    k: Option<usize>,
}

/// The passages `search_knowledge` would find for the caller (the same grants, the same
/// hybrid search): for a search box, and for checking what the agent will see.
#[utoipa::path(get, path = "/api/knowledge/search", tag = "knowledge", params(SearchQuery), responses(
    (status = 200, description = "`{results: [{chunk_id, document_id, collection_id, file, collection, byte_start, byte_end, text, score}]}`", body = SearchResults),
    (status = 400, description = "An empty or too long query", body = crate::error::ErrorBody),
    (status = 429, description = "Too many searches are running (`too_many_searches`), or the caller's budget cannot pay for embedding the query (`budget_exhausted`, `budget_in_use`)", body = crate::error::ErrorBody),
    (status = 503, description = "Collections are off here", body = crate::error::ErrorBody)))]
async fn search(
    state: web::Data<AppState>,
    who: AuthUser,
    query: web::Query<SearchQuery>,
) -> Result<HttpResponse, ApiError> {
    let q = query.q.trim();
    if q.is_empty() {
        return Ok(HttpResponse::Ok().json(SearchResults { results: vec![] }));
    }
    state.knowledge.usable()?;
    if q.chars().count() > 1000 {
        return Err(ApiError::bad_request(
            "invalid_query",
            "the query needs 1-1000 characters",
        ));
    }
    let k = query.k.unwrap_or(5).clamp(1, 20);
    let only: Vec<Uuid> = query.collection.into_iter().collect();
    // The same slots as the conversation search: both are Postgres CPU the other users share.
    let _permit = state
        .searches
        .admit_within(who.id, crate::routes::conversations::SEARCH_WAIT)
        .await
        .ok_or_else(|| {
            ApiError::too_many(
                "too_many_searches",
                "too many searches are running; retry in a moment",
                1,
            )
        })?;
    let results = crate::knowledge::search::search(&state.knowledge, who.id, &only, q, k).await?;
    Ok(HttpResponse::Ok().json(SearchResults { results }))
}
