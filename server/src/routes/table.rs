//! Every route the server answers, in one list: what the hostile-input tests enumerate
//! (each route × method with another user's ids) and what a drift check compares with the
//! `configure` functions, so a new route cannot be added without being covered.

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (sign-in, health, the browser UI).
    Public,
    /// A signed-in user, on their own objects only.
    User,
    /// Admins only.
    Admin,
    /// The metrics bearer token, when one is configured.
    MetricsToken,
    /// The SCIM bearer token (the identity provider), when SCIM is on.
    ScimToken,
}

/// One route: method, path pattern (actix syntax) and access.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub access: Access,
}

const fn r(method: &'static str, path: &'static str, access: Access) -> Route {
    Route {
        method,
        path,
        access,
    }
}

use Access::{Admin, MetricsToken, Public, ScimToken, User};

/// All routes. Keep in step with the `configure` functions (a test counts them).
pub const ROUTES: &[Route] = &[
    r("GET", "/healthz", Public),
    r("GET", "/readyz", Public),
    r("GET", "/metrics", MetricsToken),
    r("POST", "/api/auth/register", Public),
    r("POST", "/api/auth/login", Public),
    r("POST", "/api/auth/refresh", Public),
    r("POST", "/api/auth/logout", Public),
    r("GET", "/api/auth/providers", Public),
    r("GET", "/api/auth/oidc/login", Public),
    r("GET", "/api/auth/oidc/callback", Public),
    r("POST", "/api/me/password", User),
    r("GET", "/api/me", User),
    r("GET", "/api/me/preferences", User),
    r("PATCH", "/api/me/preferences", User),
    r("GET", "/api/conversations", User),
    r("POST", "/api/conversations", User),
    r("GET", "/api/conversations/{id}", User),
    r("PATCH", "/api/conversations/{id}", User),
    r("DELETE", "/api/conversations/{id}", User),
    r("GET", "/api/conversations/{id}/export", User),
    r("POST", "/api/conversations/{id}/messages", User),
    r("POST", "/api/conversations/{id}/cancel", User),
    r("POST", "/api/conversations/{id}/truncate", User),
    r("GET", "/api/approvals", User),
    r("POST", "/api/approvals/{id}", User),
    r(
        "GET",
        "/api/conversations/{id}/turns/{turn_id}/events",
        User,
    ),
    r("GET", "/api/models", User),
    r("GET", "/api/files", User),
    r("GET", "/api/files/{path:.+}", User),
    r("PUT", "/api/files/{path:.+}", User),
    r("DELETE", "/api/files/{path:.+}", User),
    r("GET", "/api/knowledge", User),
    r("GET", "/api/knowledge/search", User),
    r("GET", "/api/collections", User),
    r("POST", "/api/collections", User),
    r("GET", "/api/collections/{id}", User),
    r("PATCH", "/api/collections/{id}", User),
    r("DELETE", "/api/collections/{id}", User),
    r("PUT", "/api/collections/{id}/grants", Admin),
    r("GET", "/api/conversations/{id}/collections", User),
    r("PUT", "/api/conversations/{id}/collections", User),
    r("POST", "/api/collections/{id}/files", User),
    r("PUT", "/api/collections/{id}/files/{file}", User),
    r("DELETE", "/api/collections/{id}/files/{file}", User),
    r("POST", "/api/collections/{id}/files/{file}/retry", User),
    r("GET", "/api/collections/{id}/files/{file}/passage", User),
    r("GET", "/api/admin/users", Admin),
    r("POST", "/api/admin/users", Admin),
    r("PATCH", "/api/admin/users/{id}", Admin),
    r("DELETE", "/api/admin/users/{id}", Admin),
    r("POST", "/api/admin/users/{id}/password", Admin),
    r("GET", "/api/admin/changes", Admin),
    r("GET", "/api/admin/conversations/{id}", Admin),
    r("GET", "/api/admin/roles", Admin),
    r("PUT", "/api/admin/roles/{name}", Admin),
    r("GET", "/api/admin/models", Admin),
    r("POST", "/api/admin/models", Admin),
    r("PUT", "/api/admin/models/{name}", Admin),
    r("DELETE", "/api/admin/models/{name}", Admin),
    r("POST", "/api/admin/providers", Admin),
    r("PUT", "/api/admin/providers/{name}", Admin),
    r("DELETE", "/api/admin/providers/{name}", Admin),
    r("GET", "/api/admin/tools", Admin),
    r("GET", "/api/admin/tools/custom", Admin),
    r("POST", "/api/admin/tools/custom", Admin),
    r("GET", "/api/admin/tools/custom/{name}", Admin),
    r("PUT", "/api/admin/tools/custom/{name}", Admin),
    r("DELETE", "/api/admin/tools/custom/{name}", Admin),
    r("GET", "/api/admin/usage", Admin),
    r("GET", "/api/admin/audit", Admin),
    r("GET", "/api/admin/approvals", Admin),
    r("GET", "/api/admin/mcp-servers", Admin),
    r("POST", "/api/admin/mcp-servers", Admin),
    r("GET", "/api/admin/mcp-servers/{name}", Admin),
    r("PUT", "/api/admin/mcp-servers/{name}", Admin),
    r("DELETE", "/api/admin/mcp-servers/{name}", Admin),
    r("POST", "/api/admin/mcp-servers/{name}/refresh", Admin),
    r("GET", "/scim/v2/Users", ScimToken),
    r("POST", "/scim/v2/Users", ScimToken),
    r("GET", "/scim/v2/Users/{id}", ScimToken),
    r("PUT", "/scim/v2/Users/{id}", ScimToken),
    r("PATCH", "/scim/v2/Users/{id}", ScimToken),
    r("DELETE", "/scim/v2/Users/{id}", ScimToken),
    r("GET", "/scim/v2/Groups", ScimToken),
    r("POST", "/scim/v2/Groups", ScimToken),
    r("GET", "/scim/v2/Groups/{id}", ScimToken),
    r("PUT", "/scim/v2/Groups/{id}", ScimToken),
    r("PATCH", "/scim/v2/Groups/{id}", ScimToken),
    r("DELETE", "/scim/v2/Groups/{id}", ScimToken),
    r("GET", "/api/keys", User),
    r("POST", "/api/keys", User),
    r("DELETE", "/api/keys/{id}", User),
    r("GET", "/api/admin/keys", Admin),
    r("DELETE", "/api/admin/keys/{id}", Admin),
    r("GET", "/v1/models", User),
    r("POST", "/v1/chat/completions", User),
    r("GET", "/.well-known/jwks.json", Public),
    r("GET", "/", Public),
    r("GET", "/{path:.*}", Public),
];
