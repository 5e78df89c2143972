//! Single sign-on: `GET /api/auth/providers` (which sign-in buttons the UI shows),
//! `GET /api/auth/oidc/login` (to the provider) and `GET /api/auth/oidc/callback` (back:
//! the session cookie is set and the browser goes to the UI, or a page says what failed).

use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::auth::oidc::login_state::{self, COOKIE, LIFETIME_SECS};
use crate::auth::oidc::SsoError;
use crate::auth::session;
use crate::config::{PasswordLogin, Registration};
use crate::state::AppState;

const STATE_COOKIE_PATH: &str = "/api/auth/oidc";
/// Longest query value the callback reads (codes and states are far shorter).
const MAX_PARAM_BYTES: usize = 4096;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/auth/providers", web::get().to(providers))
        .route("/auth/oidc/login", web::get().to(login))
        .route("/auth/oidc/callback", web::get().to(callback));
}

/// How people may sign in here.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Providers {
    /// Username and password sign-in is on.
    password: bool,
    /// Anyone may register (with a password).
    registration: bool,
    /// Single sign-on buttons ("Sign in with {name}"), each opened at `login_url`.
    sso: Vec<SsoButton>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SsoButton {
    id: &'static str,
    name: String,
    login_url: &'static str,
}

/// Which sign-in methods the UI offers.
#[utoipa::path(get, path = "/api/auth/providers", tag = "auth", security(()),
    responses((status = 200, description = "Sign-in methods", body = Providers)))]
async fn providers(state: web::Data<AppState>) -> HttpResponse {
    let settings = &state.settings;
    let password = settings.oidc.password_login == PasswordLogin::Enabled;
    let sso = state
        .sso
        .provider
        .as_ref()
        .map(|_| SsoButton {
            id: "oidc",
            name: settings.oidc.display_name.clone(),
            login_url: "/api/auth/oidc/login",
        })
        .into_iter()
        .collect();
    HttpResponse::Ok().json(Providers {
        password,
        registration: password && settings.auth.registration == Registration::Open,
        sso,
    })
}

/// Starts a single sign-on: 302 to the provider, with this browser's sign-in secrets in a
/// signed, short-lived cookie.
#[utoipa::path(get, path = "/api/auth/oidc/login", tag = "auth", security(()), responses(
    (status = 302, description = "To the identity provider"),
    (status = 404, description = "Single sign-on is not configured (an HTML page)", content_type = "text/html", body = String),
    (status = 502, description = "The provider cannot be reached (an HTML page)", content_type = "text/html", body = String)))]
#[tracing::instrument(skip_all)]
async fn login(state: web::Data<AppState>) -> HttpResponse {
    let Some(provider) = &state.sso.provider else {
        return error_page(&SsoError::NotConfigured);
    };
    let now = chrono::Utc::now().timestamp();
    match provider.begin(now).await {
        Ok((url, login)) => {
            let cookie = state_cookie(&state, state.sso.login_state.seal(&login), LIFETIME_SECS);
            HttpResponse::Found()
                .insert_header((header::LOCATION, url.as_str()))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .cookie(cookie)
                .finish()
        }
        Err(e) => failed(e),
    }
}

/// What the provider appends to the redirect URL.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    /// An OAuth error code (`access_denied`, ...).
    error: Option<String>,
}

/// The provider sends the browser back here: on success the refresh cookie is set and the
/// browser goes to the UI (303 to `/`); otherwise an HTML page says what happened.
#[utoipa::path(get, path = "/api/auth/oidc/callback", tag = "auth", security(()), params(CallbackQuery),
    responses(
    (status = 303, description = "Signed in: to the UI, with the refresh cookie set"),
    (status = 400, description = "State missing, expired or not this browser's (an HTML page)", content_type = "text/html", body = String),
    (status = 401, description = "The ID token was refused (an HTML page)", content_type = "text/html", body = String),
    (status = 403, description = "Denied at the provider, no mapped group, or a disabled account (an HTML page)", content_type = "text/html", body = String),
    (status = 404, description = "Single sign-on is not configured (an HTML page)", content_type = "text/html", body = String),
    (status = 409, description = "The new role would leave no enabled admin (an HTML page)", content_type = "text/html", body = String),
    (status = 502, description = "The provider failed or cannot be reached (an HTML page)", content_type = "text/html", body = String)))]
#[tracing::instrument(skip_all)]
async fn callback(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let query = web::Query::<CallbackQuery>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .ok();
    let presented = req.cookie(COOKIE).map(|c| c.value().to_owned());
    let mut resp = match finish(&state, query, presented).await {
        Ok(pair) => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/"))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .cookie(super::auth::refresh_cookie(&state, pair.refresh_token))
            .finish(),
        Err(e) => failed(e),
    };
    // The sign-in's secrets are spent whatever happened.
    let _ = resp.add_cookie(&state_cookie(&state, String::new(), 0));
    resp
}

async fn finish(
    state: &AppState,
    query: Option<CallbackQuery>,
    presented: Option<String>,
) -> Result<session::TokenPair, SsoError> {
    let provider = state.sso.provider.as_ref().ok_or(SsoError::NotConfigured)?;
    let query = query.ok_or(SsoError::BadState)?;
    let too_long = |v: &Option<String>| v.as_ref().is_some_and(|s| s.len() > MAX_PARAM_BYTES);
    if too_long(&query.code) || too_long(&query.state) || too_long(&query.error) {
        return Err(SsoError::BadState);
    }
    let now = chrono::Utc::now().timestamp();
    let login = presented
        .and_then(|c| state.sso.login_state.open(&c, now))
        .ok_or(SsoError::BadState)?;
    if !query
        .state
        .as_deref()
        .is_some_and(|s| login_state::same(s, &login.state))
    {
        return Err(SsoError::BadState);
    }
    if let Some(error) = query.error {
        let known = error.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        return Err(SsoError::Provider(if known {
            error
        } else {
            "unknown".into()
        }));
    }
    let code = query.code.ok_or(SsoError::BadState)?;
    let identity = provider.finish(&code, &login).await?;
    let account = crate::auth::oidc::account::sign_in(state, &state.sso.roles, &identity).await?;
    Ok(session::open_session(state, &account).await?)
}

fn state_cookie(state: &AppState, value: String, max_age: i64) -> Cookie<'static> {
    // Lax, not Strict: the provider's redirect back is a cross-site top-level navigation.
    Cookie::build(COOKIE, value)
        .http_only(true)
        .secure(state.settings.auth.cookie_secure)
        .same_site(SameSite::Lax)
        .path(STATE_COOKIE_PATH)
        .max_age(CookieDuration::seconds(max_age))
        .finish()
}

fn failed(e: SsoError) -> HttpResponse {
    let (_, code, _) = e.public();
    tracing::warn!(error = %e, code, "single sign-on failed");
    error_page(&e)
}

/// A small page in the UI's style that says what happened, with a way back.
fn error_page(e: &SsoError) -> HttpResponse {
    let (status, code, message) = e.public();
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>Sign-in failed · AgentChat</title><link rel=\"stylesheet\" href=\"/app.css\"></head>\
<body><main id=\"main\" class=\"auth-page\"><div class=\"auth-card\">\
<h1 class=\"auth-title\">Sign-in failed</h1>\
<p class=\"form-error\" role=\"alert\" data-code=\"{code}\">{message}</p>\
<p class=\"auth-foot\"><a href=\"/login\">Back to sign in</a></p>\
</div></main></body></html>\n"
    );
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            "Content-Security-Policy",
            super::web::CONTENT_SECURITY_POLICY,
        ))
        .body(body)
}
