//! The table of rooms: every module of the crate is in one, and each room names the rooms
//! it may use. Data flows one way, route -> (auth) -> turn/budget/tools -> llm/db; the
//! lower rooms know nothing of the upper ones, and the table has no cycle.
//!
//! A room is a module path and what lies under it (`auth`), unless a longer path is a room
//! of its own (`auth::token`: the HTTP-free token the turn may take). A new module under
//! `src` fails the test until it is given a row here: add it where its dependencies put it,
//! with the rooms it may use and, for anything unusual, why.

/// One row of the table.
#[derive(Debug)]
pub struct Room {
    /// What the table calls it (and the path it holds, unless `holds` says otherwise).
    pub name: &'static str,
    /// The module paths it holds, when it is more than one.
    pub holds: &'static [&'static str],
    /// The rooms it may use.
    pub uses: &'static [&'static str],
    /// Single items of other rooms it may name (and nothing else of theirs).
    pub names: &'static [&'static str],
    /// Whether it may use `actix_web`.
    pub http: bool,
    /// Why, where a dependency needs saying.
    pub why: &'static str,
}

impl Room {
    pub const fn new(name: &'static str, uses: &'static [&'static str]) -> Self {
        Self {
            name,
            holds: &[],
            uses,
            names: &[],
            http: false,
            why: "",
        }
    }

    /// It serves or reads HTTP requests (`actix_web`).
    pub const fn http(self) -> Self {
        Self { http: true, ..self }
    }

    pub const fn holds(self, holds: &'static [&'static str]) -> Self {
        Self { holds, ..self }
    }

    pub const fn names(self, names: &'static [&'static str]) -> Self {
        Self { names, ..self }
    }

    pub const fn why(self, why: &'static str) -> Self {
        Self { why, ..self }
    }

    /// The module paths it holds.
    pub fn held(&self) -> &[&'static str] {
        if self.holds.is_empty() {
            std::slice::from_ref(&self.name)
        } else {
            self.holds
        }
    }
}

/// The HTTP edge: the app's state, the request extractors and the HTTP errors.
pub const EDGE: &[&str] = &["state", "extract", "error"];

/// The rooms that may use [`EDGE`]: the HTTP side, and the edge itself.
pub const EDGE_USERS: &[&str] = &[
    "routes",
    "scim",
    "startup",
    "openapi",
    "openapi::schemas",
    "auth::http",
    "security::middleware",
    "state",
    "extract",
    "error",
];

/// Paths only their own top-level module may name: the turn's database steps, and what the
/// database tests outside the crate reach of the turn.
pub const PRIVATE: &[&str] = &["turn::sql", "turn::testing"];

/// The rooms, from the bottom up.
pub const ROOMS: &[Room] = &[
    // The words every layer shares, and small pieces for any caller.
    Room::new("domain", &[]),
    Room::new("budget", &[]),
    Room::new("shard", &[]),
    Room::new("files", &[]).why("the users' file store: paths, quota, storage"),
    Room::new("sandbox", &["config"]).why("limited child processes and jails, for any caller"),
    Room::new("metrics", &["sandbox"])
        .http()
        .why("sandbox: the code interpreter's series, defined beside the jail"),
    Room::new("observe", &["metrics"])
        .http()
        .why("the middleware that measures requests"),
    Room::new("auth::token", &[]).why("the HTTP-free proof of a signed access token"),
    Room::new("config", &["domain", "files"])
        .names(&[
            "tools::HttpToolConfig",
            "tools::mcp::McpLimits",
            "tools::mcp::McpServerConfig",
            "tools::mcp::config",
            "security::SecuritySettings",
            "tools::truncate_chars",
        ])
        .why("gathers each room's settings type, kept beside the code that reads it"),
    Room::new("db", &["domain", "config", "budget", "shard"]),
    Room::new("llm", &["domain", "config", "shard"]).why("no database, no tools, no routes"),
    Room::new("cluster", &["db", "domain", "config"])
        .why("the turn plugs in through `channel::Subscriber`"),
    Room::new(
        "catalogue",
        &["cluster", "config", "db", "domain", "llm", "metrics"],
    )
    .why("models, prices, fallback and breakers: one face the turn and the routes read"),
    Room::new(
        "tools",
        &[
            "db", "domain", "config", "cluster", "shard", "files", "sandbox",
        ],
    )
    .why("no provider, no HTTP errors"),
    Room::new("accounts", &["db", "domain", "cluster", "tools"]),
    Room::new("websearch", &["budget", "config", "db", "domain", "tools"])
        .why("search providers, their breakers, the roles' site rules and the web_search tool"),
    Room::new("assistants", &["db", "domain"]),
    Room::new("memory", &["config", "db", "domain", "tools"]),
    Room::new("sharing", &["db", "domain", "files", "tools"])
        .why("files: the owner's workspace files"),
    Room::new(
        "knowledge",
        &[
            "budget",
            "catalogue",
            "config",
            "db",
            "domain",
            "files",
            "llm",
            "metrics",
            "sandbox",
            "tools",
        ],
    ),
    Room::new("fuzzing", &["knowledge", "llm"]).why("entry points for the fuzz targets"),
    Room::new(
        "banner",
        &["catalogue", "config", "domain", "knowledge", "llm"],
    ),
    Room::new("telemetry", &["config", "banner"]).why("banner: whether stderr gets colour"),
    Room::new(
        "auth",
        &["auth::token", "config", "db", "domain", "telemetry"],
    )
    .http()
    .why("passwords, JWT, refresh tokens, throttle, sign-on (its errors carry a status)"),
    Room::new(
        "turn",
        &[
            "assistants",
            "auth::token",
            "budget",
            "catalogue",
            "cluster",
            "config",
            "db",
            "domain",
            "files",
            "knowledge",
            "llm",
            "memory",
            "metrics",
            "shard",
            "telemetry",
            "tools",
            "websearch",
        ],
    )
    .why("never `auth`'s HTTP side, `error`, `routes`, `state`"),
    Room::new("security", &["config", "domain"])
        .http()
        .why("settings, gates and the client's address"),
    Room::new(
        "error",
        &[
            "assistants",
            "auth",
            "catalogue",
            "config",
            "db",
            "domain",
            "knowledge",
            "memory",
            "sharing",
            "turn",
        ],
    )
    .http()
    .why("maps each room's errors to HTTP answers"),
    Room::new(
        "state",
        &[
            "auth",
            "budget",
            "catalogue",
            "config",
            "db",
            "files",
            "knowledge",
            "metrics",
            "sandbox",
            "security",
            "sharing",
            "tools",
            "turn",
            "websearch",
        ],
    ),
    Room::new("extract", &["domain", "error", "state"]).http(),
    Room::new(
        "auth::http",
        &[
            "accounts",
            "auth",
            "auth::token",
            "config",
            "db",
            "domain",
            "error",
            "state",
        ],
    )
    .holds(&[
        "auth::extract",
        "auth::api_key",
        "auth::session",
        "auth::password_change",
        "auth::oidc::account",
    ])
    .http()
    .why("the extractors that guard every route and the session services: they answer requests"),
    Room::new(
        "security::middleware",
        &["security", "domain", "error", "scim"],
    )
    .holds(&["security::origin", "security::text_guard"])
    .http()
    .why("middleware that answers a request itself, in SCIM's error shape on its paths"),
    Room::new(
        "scim",
        &[
            "accounts",
            "auth",
            "auth::http",
            "config",
            "db",
            "domain",
            "error",
            "state",
        ],
    )
    .http(),
    Room::new(
        "openapi::schemas",
        &[
            "budget",
            "catalogue",
            "config",
            "db",
            "domain",
            "error",
            "files",
            "llm",
            "tools",
            "turn",
        ],
    )
    .holds(&["openapi::schemas", "openapi::common", "openapi::openai"])
    .http()
    .why("the answers' types and shared parts of the API document, which the routes use"),
    Room::new(
        "routes",
        &[
            "accounts",
            "assistants",
            "auth",
            "auth::http",
            "auth::token",
            "budget",
            "catalogue",
            "cluster",
            "config",
            "db",
            "domain",
            "error",
            "extract",
            "files",
            "knowledge",
            "llm",
            "memory",
            "metrics",
            "openapi::schemas",
            "scim",
            "security",
            "security::middleware",
            "sharing",
            "state",
            "tools",
            "turn",
            "websearch",
        ],
    )
    .http(),
    Room::new("openapi", &["error", "openapi::schemas", "routes", "turn"])
        .http()
        .why("the API document: the routes' paths and their answers"),
    Room::new(
        "startup",
        &[
            "auth",
            "auth::http",
            "banner",
            "budget",
            "catalogue",
            "cluster",
            "config",
            "db",
            "domain",
            "error",
            "files",
            "knowledge",
            "memory",
            "metrics",
            "observe",
            "openapi",
            "routes",
            "security",
            "security::middleware",
            "sharing",
            "sandbox",
            "state",
            "tools",
            "turn",
            "websearch",
        ],
    )
    .http(),
];
