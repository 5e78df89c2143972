//! The answers every route of a kind can give, added to each operation of the description
//! (see the module doc of [`super`]), and the security schemes.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response, ResponseBuilder};
use utoipa::Modify;

/// The name of the access-token scheme.
pub const BEARER: &str = "bearer";
/// The name of the optional `/metrics` token scheme.
pub const METRICS_TOKEN: &str = "metrics_token";
/// The name of the SCIM provisioning token scheme.
pub const SCIM_TOKEN: &str = "scim_token";

pub struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, doc: &mut OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some("An access token from `POST /api/auth/login`"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            METRICS_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("`AGENTCHAT_METRICS_TOKEN`, when the server sets one"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            SCIM_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`AGENTCHAT_SCIM_TOKEN`: the identity provider's provisioning token",
                    ))
                    .build(),
            ),
        );
        for (path, item) in doc.paths.paths.iter_mut() {
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in ops.into_iter().flatten() {
                add_common(path, op);
            }
        }
    }
}

fn add_common(path: &str, op: &mut Operation) {
    let api = path.starts_with("/api/");
    let public = !api || path.starts_with("/api/auth/") || op.security.is_some();
    if !public {
        op.security = Some(vec![SecurityRequirement::new(BEARER, Vec::<String>::new())]);
        add(op, 401, "No valid access token, or the account is disabled");
    }
    if path.starts_with("/scim/") {
        add_scim(op, 401, "No valid SCIM bearer token");
        add_scim(op, 404, "SCIM is off, or no such resource");
        add_scim(
            op,
            400,
            "Invalid filter, body or value (scimType says which)",
        );
        add_scim(op, 503, "The database is unreachable; retry shortly");
    }
    if path.starts_with("/api/admin/") {
        add(op, 403, "The caller is not an admin");
    }
    if op
        .request_body
        .as_ref()
        .is_some_and(|b| b.content.keys().any(|c| c.as_str() == "application/json"))
    {
        add(op, 400, "The body is malformed or a field is invalid");
        add(op, 413, "The body is larger than the server accepts");
        add(op, 415, "The body is not `application/json`");
    }
    let params = op.parameters.as_deref().unwrap_or_default();
    let has = |place: fn(&ParameterIn) -> bool| params.iter().any(|p| place(&p.parameter_in));
    let (query, path_params) = (
        has(|p| matches!(p, ParameterIn::Query)),
        has(|p| matches!(p, ParameterIn::Path)),
    );
    if query {
        add(op, 400, "A query parameter is invalid");
    }
    if path_params {
        add(op, 404, "No such object, or it is not the caller's");
    }
    if api && path != "/api/openapi.json" {
        add(op, 503, "The database is unreachable; retry shortly");
    }
}

/// Adds an error answer for `status` unless the route's own annotation describes it.
fn add(op: &mut Operation, status: u16, description: &str) {
    op.responses
        .responses
        .entry(status.to_string())
        .or_insert_with(|| RefOr::T(error_response(description)));
}

/// A SCIM error answer (RFC 7644 `Error`), unless the route describes the status itself.
fn add_scim(op: &mut Operation, status: u16, description: &str) {
    op.responses
        .responses
        .entry(status.to_string())
        .or_insert_with(|| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(description)
                    .content(
                        "application/scim+json",
                        ContentBuilder::new()
                            .schema(Some(utoipa::openapi::schema::Object::new()))
                            .build(),
                    )
                    .build(),
            )
        });
}

/// An answer with the error body.
pub fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}
