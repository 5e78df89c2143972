//! `/api/conversations`: a user's own conversations. Ownership is part of every query, so
//! another user's id answers 404 exactly like a missing one.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::conversation_export::export;
use super::conversation_read;
use crate::auth::{AuthUser, SignedToken};
use crate::catalogue::RoleModels;
use crate::db::models::user::{self, Rejection};
use crate::db::{self, models::conversation, models::preferences};
use crate::error::ApiError;
use crate::extract::{Json, JsonOrDefault};
use crate::state::AppState;

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;
const MAX_TITLE_CHARS: usize = 200;
/// Longest per-conversation system prompt, in characters.
pub const MAX_SYSTEM_PROMPT_CHARS: usize = 4_000;
/// Longest search text, in characters.
const MAX_QUERY_CHARS: usize = 200;
/// Most words (and quoted phrases' words) in a search: each is one more tsquery operand
/// matched against every one of the searcher's messages.
const MAX_QUERY_TERMS: usize = 12;
/// How long a search waits for a free search slot before 429.
pub(crate) const SEARCH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/conversations")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/conversations/{id}")
            .route(web::get().to(conversation_read::get))
            .route(web::patch().to(update))
            .route(web::delete().to(delete)),
    )
    .route("/conversations/{id}/export", web::get().to(export));
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Page size, 1 to 200 (default 50).
    limit: Option<i64>,
    /// Opaque cursor from the previous page's `next_cursor`.
    cursor: Option<String>,
    /// `true`: the archived conversations instead of the others.
    archived: Option<bool>,
    /// Search: conversations (archived included) whose title contains this text or whose
    /// messages match it (full-text: words, "a phrase", -excluded); up to 200 characters.
    /// Results carry a `snippet` of the latest matching message and no cursor.
    q: Option<String>,
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ConversationCreate {
    /// Without one, the conversation is titled after its first answer (a short model call).
    title: Option<String>,
    /// Without one, the caller's default model (`/api/me/preferences`), else the server's.
    model: Option<String>,
    /// Instructions added after the server's system prompt, up to 4,000 characters.
    system_prompt: Option<String>,
    /// Starts the conversation with an assistant (`GET /api/assistants`): its model, tools,
    /// collections and instructions apply to every message.
    assistant_id: Option<Uuid>,
}

/// What `PATCH` may change; at least one field. `model` and `system_prompt` apply from the
/// next message (a reply being generated keeps the ones it started with).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ConversationPatch {
    title: Option<String>,
    pinned: Option<bool>,
    archived: Option<bool>,
    /// One of `GET /api/models`.
    model: Option<String>,
    /// Instructions added after the server's system prompt (never replacing it), up to
    /// 4,000 characters; empty or `null` removes them.
    #[serde(default, deserialize_with = "super::preferences::present")]
    #[schema(value_type = Option<String>, nullable)]
    system_prompt: Option<Option<String>>,
    /// Whether the caller's memory notes go into this conversation's prompts.
    memory_enabled: Option<bool>,
}

/// A conversation's instructions, trimmed; `None` when empty (no instructions).
fn clean_system_prompt(text: &str) -> Result<Option<String>, ApiError> {
    if text.chars().count() > MAX_SYSTEM_PROMPT_CHARS {
        return Err(ApiError::bad_request(
            "invalid_system_prompt",
            format!("system_prompt must be at most {MAX_SYSTEM_PROMPT_CHARS} characters"),
        ));
    }
    let cleaned = crate::db::pg_safe_text(text);
    let t = cleaned.trim();
    Ok((!t.is_empty()).then(|| t.to_owned()))
}

fn clean_title(title: &str) -> Result<String, ApiError> {
    let cleaned = crate::db::pg_safe_text(title);
    let t = cleaned.trim();
    if t.is_empty() || t.chars().count() > MAX_TITLE_CHARS {
        return Err(ApiError::bad_request(
            "invalid_title",
            format!("title must be 1 to {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(t.to_owned())
}

fn encode_cursor(c: &conversation::Conversation) -> String {
    let pinned = if c.pinned { "p" } else { "u" };
    format!("{pinned}{}_{}", c.updated_at.timestamp_micros(), c.id)
}

fn decode_cursor(s: &str) -> Result<conversation::PageCursor, ApiError> {
    let bad =
        || ApiError::bad_request("invalid_cursor", "the cursor is not one this server issued");
    let pinned = match s.get(..1) {
        Some("p") => true,
        Some("u") => false,
        _ => return Err(bad()),
    };
    let (micros, id) = s[1..].split_once('_').ok_or_else(bad)?;
    let at = micros
        .parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .ok_or_else(bad)?;
    Ok((pinned, at, Uuid::parse_str(id).map_err(|_| bad())?))
}

/// The caller's conversations: pinned first, then most recently active; archived ones with
/// `?archived=true`; a search with `?q=`.
#[utoipa::path(get, path = "/api/conversations", tag = "conversations", params(ListQuery),
    responses((status = 200, description = "A page", body = crate::openapi::schemas::ConversationPage),
    (status = 400, description = "A cursor this server did not issue, or a search too long or of too many words", body = crate::error::ErrorBody),
    (status = 429, description = "Too many searches are running (`too_many_searches`)", body = crate::error::ErrorBody),
    (status = 503, description = "The database took too long (`database_timeout`) or is unreachable", body = crate::error::ErrorBody)))]
async fn list(
    state: web::Data<AppState>,
    who: AuthUser,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    if let Some(q) = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        if q.chars().count() > MAX_QUERY_CHARS {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("q must be at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        if q.split_whitespace().count() > MAX_QUERY_TERMS {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("q may hold at most {MAX_QUERY_TERMS} words"),
            ));
        }
        let q = crate::db::pg_safe_text(q);
        // Two searches per user at a time, and a few server-wide: a search walks all of the
        // searcher's messages, and the machine's other cores stay everyone else's.
        let _permit = state
            .searches
            .admit_within(who.id, SEARCH_WAIT)
            .await
            .ok_or_else(|| {
                ApiError::too_many(
                    "too_many_searches",
                    "too many searches are running; retry in a moment",
                    1,
                )
            })?;
        let mut conn = db::conn(&state.pool).await?;
        let items = conversation::search_owned(&mut conn, who.id, &q, limit).await?;
        return Ok(HttpResponse::Ok().json(json!({"items": items, "next_cursor": null})));
    }
    let shelf = if query.archived == Some(true) {
        conversation::Shelf::Archived
    } else {
        conversation::Shelf::Active
    };
    let before = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let mut conn = db::conn(&state.pool).await?;
    let items = conversation::list_owned(&mut conn, who.id, shelf, limit, before).await?;
    let next_cursor = (items.len() as i64 == limit)
        .then(|| items.last().map(encode_cursor))
        .flatten();
    Ok(HttpResponse::Ok().json(json!({"items": items, "next_cursor": next_cursor})))
}

/// Starts a conversation.
#[utoipa::path(post, path = "/api/conversations", tag = "conversations",
    request_body(content = Option<ConversationCreate>, description = "Empty: default title and model"), responses(
    (status = 201, description = "Created", body = crate::db::models::conversation::Conversation),
    (status = 403, description = "The caller's role may not use the model (`model_not_allowed`, naming the role)", body = crate::error::ErrorBody),
    (status = 404, description = "No assistant with that id that the caller may use (`not_found`)", body = crate::error::ErrorBody),
    (status = 422, description = "The model is not offered", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    token: SignedToken,
    JsonOrDefault(body): JsonOrDefault<ConversationCreate>,
) -> Result<HttpResponse, ApiError> {
    let title = body.title.as_deref().map(clean_title).transpose()?;
    let system_prompt = body
        .system_prompt
        .as_deref()
        .map(clean_system_prompt)
        .transpose()?
        .flatten();
    // Queued like a turn's start: under load the chat's first request waits, not 503s. So
    // the account is checked here, on that connection, not by an `AuthUser` extractor
    // taking one of its own with the pool's acquire timeout.
    let mut conn = state
        .pool
        .get_queued(state.settings.llm.turn_timeout)
        .await?;
    let who = user::auth_state(&mut conn, token.user_id)
        .await?
        .ok_or(Rejection::NoAccount)?;
    who.admits(token.token_version)?;
    let who_id = token.user_id;
    let access = RoleModels::of(&mut conn, &who.role).await?;
    let catalogue = &state.catalogue.now();
    let assistant = match body.assistant_id {
        Some(id) => Some(
            crate::assistants::store::get(&mut conn, id)
                .await?
                .filter(|a| a.visible_to(&who.role))
                .ok_or_else(|| ApiError::not_found("assistant"))?,
        ),
        None => None,
    };
    // Named explicitly: kept even when it is the default today (an assistant's wins).
    let asked = assistant
        .as_ref()
        .and_then(|a| a.model.clone())
        .or(body.model);
    let explicit = asked.is_some();
    let model = match asked {
        Some(m) => {
            access.check(catalogue, &m)?;
            m
        }
        // The caller's default while it is offered and allowed, else the role's first.
        None => {
            let preferred = preferences::find(&mut conn, who_id)
                .await?
                .and_then(|p| p.default_model);
            access.pick(catalogue, preferred.as_deref())?
        }
    };
    // A conversation that names no model of its own follows the server's default.
    let named = (explicit || model != catalogue.default_model()).then_some(model);
    let mut created =
        conversation::create(&mut conn, who_id, title.as_deref(), named.as_deref()).await?;
    if system_prompt.is_some() || assistant.is_some() {
        let changes = conversation::Changes {
            system_prompt: system_prompt.is_some().then_some(system_prompt),
            assistant_id: assistant.map(|a| Some(a.id)),
            ..Default::default()
        };
        created = conversation::update_owned(&mut conn, created.id, who_id, &changes)
            .await?
            .ok_or_else(|| ApiError::not_found("conversation"))?;
    }
    Ok(HttpResponse::Created().json(created))
}

/// Renames, pins or archives a conversation, or changes its model or instructions.
#[utoipa::path(patch, path = "/api/conversations/{id}", tag = "conversations", params(("id" = Uuid, Path)),
    request_body = ConversationPatch,
    responses((status = 200, description = "Changed", body = crate::db::models::conversation::Conversation),
    (status = 403, description = "The caller's role may not use the model (`model_not_allowed`, naming the role)", body = crate::error::ErrorBody),
    (status = 422, description = "The model is not offered", body = crate::error::ErrorBody)))]
async fn update(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<ConversationPatch>,
) -> Result<HttpResponse, ApiError> {
    if body.title.is_none()
        && body.pinned.is_none()
        && body.archived.is_none()
        && body.model.is_none()
        && body.system_prompt.is_none()
        && body.memory_enabled.is_none()
    {
        return Err(ApiError::bad_request(
            "nothing_to_change",
            "send at least one of title, pinned, archived, model, system_prompt, memory_enabled",
        ));
    }
    let title = body.title.as_deref().map(clean_title).transpose()?;
    let changes = conversation::Changes {
        // A title the user chose is never replaced by a generated one.
        title_auto: title.as_ref().map(|_| false),
        title,
        pinned: body.pinned,
        archived_at: body
            .archived
            .map(|archived| archived.then(chrono::Utc::now)),
        model: body.model,
        system_prompt: body
            .system_prompt
            .map(|p| p.as_deref().map(clean_system_prompt).transpose())
            .transpose()?
            .map(Option::flatten),
        memory_enabled: body.memory_enabled,
        assistant_id: None,
    };
    let mut conn = db::conn(&state.pool).await?;
    if let Some(m) = changes.model.as_deref() {
        RoleModels::of(&mut conn, &who.role)
            .await?
            .check(&state.catalogue.now(), m)?;
    }
    let conv = conversation::update_owned(&mut conn, *id, who.id, &changes)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    Ok(HttpResponse::Ok().json(conv))
}

/// Deletes a conversation and its messages.
#[utoipa::path(delete, path = "/api/conversations/{id}", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted")))]
async fn delete(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    if conversation::delete_owned(&mut conn, *id, who.id).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::not_found("conversation"))
    }
}
