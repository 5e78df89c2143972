//! The `/v1` handlers: thin translations between OpenAI's protocol and the agent.

use actix_web::{web, HttpRequest, HttpResponse};

use super::error::OpenAiError;
use super::{request, respond};
use crate::auth::api_key::TurnCaller;
use crate::auth::ApiCaller;
use crate::catalogue::RoleModels;
use crate::error::ApiError;
use crate::extract::Json;
use crate::llm::openai::wire;
use crate::state::AppState;
use crate::turn::TurnError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/models", web::get().to(models))
        .route("/chat/completions", web::post().to(chat_completions));
}

/// The models the server offers, as OpenAI lists them.
#[utoipa::path(get, path = "/v1/models", tag = "openai", security(("bearer" = [])),
    responses(
    (status = 200, description = "The models offered", body = crate::openapi::openai::OpenAiModels),
    (status = 401, description = "No valid API key or access token", body = crate::openapi::openai::OpenAiErrorBody)))]
async fn models(
    state: web::Data<AppState>,
    caller: Result<ApiCaller, ApiError>,
) -> Result<HttpResponse, OpenAiError> {
    let caller = caller?;
    let mut conn = crate::db::conn(&state.pool).await.map_err(ApiError::from)?;
    let access = RoleModels::of(&mut conn, &caller.role)
        .await
        .map_err(ApiError::from)?;
    drop(conn);
    let catalogue = state.catalogue.now();
    let names = access.allowed_names(&catalogue);
    let assistants = super::assistant::listed(&state, &caller.role, &names).await?;
    let entries = names.iter().map(|n| (n.clone(), n.as_str())).chain(
        assistants
            .iter()
            .map(|(id, _, model)| (id.clone(), model.as_str())),
    );
    let data = entries
        .filter_map(|(id, model)| {
            catalogue
                .get(model)
                .map(|m| wire::Model::new(id, m.input.clone(), m.max_image_bytes, m.max_images))
        })
        .collect();
    Ok(HttpResponse::Ok().json(wire::ModelList {
        object: "list".into(),
        data,
    }))
}

/// One agent turn in the Chat Completions format: the caller's allowed tools run on the
/// server, the client's own `tools` come back as `tool_calls`; streamed when `stream` is
/// true. Stored as the caller's conversation, budgeted and audited like any turn.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai", security(("bearer" = [])),
    request_body = crate::openapi::openai::OpenAiChatRequest,
    responses(
    (status = 200, description = "A `chat.completion`, or with `stream: true` a `text/event-stream` of `chat.completion.chunk` ending in `data: [DONE]`",
        content((crate::openapi::openai::OpenAiCompletion = "application/json"), (crate::openapi::schemas::SseEvent = "text/event-stream"))),
    (status = 400, description = "Invalid request", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 401, description = "No valid API key or access token", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 403, description = "The caller's role may not use the model (`model_not_allowed`, naming the role)", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 404, description = "Unknown model", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 429, description = "Token budget used up (`insufficient_quota`, with `Retry-After`) or held by running turns", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 502, description = "The model failed mid-turn", body = crate::openapi::openai::OpenAiErrorBody),
    (status = 503, description = "The database is unreachable", body = crate::openapi::openai::OpenAiErrorBody)))]
async fn chat_completions(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<TurnCaller, ApiError>,
    body: Result<Json<wire::ChatCompletionRequest>, ApiError>,
) -> Result<HttpResponse, OpenAiError> {
    let caller = caller?;
    // A key taken from the cache is checked by the turn's start; an answer given before
    // that checks it first, so a revoked key gets its 401 whatever else is wrong.
    let translated = match body {
        Ok(Json(mut body)) => {
            // `assistant:<name>` runs on the assistant's model, and is answered under its name.
            match super::assistant::named(&state, &caller.caller.role, &body.model).await {
                Ok(assistant) => {
                    let asked = body.model.clone();
                    if let Some(a) = &assistant {
                        body.model = super::assistant::model_of(&state, a);
                    }
                    request::translate(
                        body,
                        &state.settings.llm,
                        &state.catalogue.now(),
                        &state.settings.images,
                    )
                    .map(|(mut turn, mut answer)| {
                        if let Some(a) = assistant {
                            turn.assistant_id = Some(a.id);
                            answer.model = asked;
                        }
                        (turn, answer)
                    })
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e.into()),
    };
    let (mut turn, answer) = match translated {
        Ok(t) => t,
        Err(e) => {
            caller.confirm(&state).await?;
            return Err(e);
        }
    };
    turn.key_scopes = caller.caller.key_scopes;
    let client_tools = turn.client_tools.iter().map(|t| t.name.clone()).collect();
    // The turn runs on its own; this request follows its log (a client that goes away
    // leaves it to finish and be stored).
    let follower = state
        .engine
        .send_api(caller.caller.signed(), caller.api_key(), turn)
        .await
        .inspect_err(|e| {
            if matches!(e, TurnError::Account(_)) {
                caller.forget(&state);
            }
        })?;
    let meta = respond::Meta::new(
        follower.turn_id(),
        follower.conversation_id(),
        answer,
        client_tools,
    );
    let stream = meta.answer.stream;
    if stream {
        Ok(respond::stream(
            &req,
            follower,
            meta,
            state.settings.sse_keep_alive,
        ))
    } else {
        respond::complete(follower, meta).await
    }
}
