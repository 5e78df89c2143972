//! One way to arrange a test server: [`TestApp::builder`].
//!
//! Before it, each test file had its own `spawn_app_with` closure pointing the server at the
//! fake upstream, and its own lines signing up an admin and a member and setting a role or a
//! budget. The copies had drifted (some retried the fake's errors after half a second, some
//! did not; some named a model, some sent the demo's), so what a test meant by "a server on
//! the fake model" depended on the file it was in. The builder says it once; a test names
//! only what it needs beyond that.
//!
//! ```ignore
//! let fake = FakeUpstream::start().await;
//! let (app, [admin, alice]) = TestApp::builder()
//!     .openai(&fake)
//!     .role("member", json!({"tools": ["calculator"]}))
//!     .budget("alice", Some(100_000))
//!     .start_as(["boss", "alice"])
//!     .await;
//! ```

use agentchat::budget::Clock;
use agentchat::config::{ProviderKind, Settings};
use agentchat::tools::mcp::McpServerConfig;
use serde_json::Value;

use crate::fake_upstream::FakeUpstream;
use crate::{fresh_database, start_server, test_settings, Session, TestApp};

type Customise<'a> = Box<dyn FnOnce(&mut Settings) + 'a>;

/// Arranges a [`TestApp`]: its settings (applied in the order given, after
/// [`test_settings`]), then, once it runs, its accounts, roles and budgets.
#[must_use = "nothing starts until `start` or `start_as`"]
pub struct AppBuilder<'a> {
    database_url: Option<String>,
    exact: Option<Settings>,
    on_pgvector: bool,
    clock: Option<Clock>,
    customise: Vec<Customise<'a>>,
    roles: Vec<(String, Value)>,
    budgets: Vec<(String, Option<i64>)>,
    mcp_registered: Vec<Value>,
}

impl TestApp {
    /// A builder for a server on a fresh database with the test settings.
    pub fn builder<'a>() -> AppBuilder<'a> {
        AppBuilder {
            database_url: None,
            exact: None,
            on_pgvector: false,
            clock: None,
            customise: Vec::new(),
            roles: Vec::new(),
            budgets: Vec::new(),
            mcp_registered: Vec::new(),
        }
    }
}

impl<'a> AppBuilder<'a> {
    /// Adjusts the settings (after what was given before).
    pub fn settings(mut self, customise: impl FnOnce(&mut Settings) + 'a) -> Self {
        self.customise.push(Box::new(customise));
        self
    }

    /// The model is the fake's OpenAI Chat Completions endpoint.
    pub fn openai(self, fake: &FakeUpstream) -> Self {
        self.openai_at(fake.base_url_openai())
    }

    /// The model is an OpenAI endpoint at `base_url` (one that is not the fake: a closed
    /// port, say). Like every upstream set here, without retries: a scripted error is
    /// answered at once instead of after the default half-second back-off; a test of
    /// retries asks for them with [`AppBuilder::settings`].
    pub fn openai_at(self, base_url: impl Into<String>) -> Self {
        self.upstream(ProviderKind::Openai, base_url.into())
    }

    /// The model is the fake's Anthropic Messages endpoint (without retries, as
    /// [`AppBuilder::openai_at`]).
    pub fn anthropic(self, fake: &FakeUpstream) -> Self {
        self.upstream(ProviderKind::Anthropic, fake.base_url_anthropic())
    }

    fn upstream(self, provider: ProviderKind, base_url: String) -> Self {
        self.settings(move |s| {
            s.llm.provider = provider;
            s.llm.base_url = base_url;
            s.llm.max_retries = 0;
        })
    }

    /// The default model is `model` and the only one a conversation may pick. Without it the
    /// server keeps the settings' default (`demo`), which the fake echoes back as well.
    pub fn model(self, model: &str) -> Self {
        self.models(&[model])
    }

    /// The default model is the first of `models`; a conversation may pick any of them.
    pub fn models(self, models: &[&str]) -> Self {
        let models: Vec<String> = models.iter().map(|m| (*m).to_owned()).collect();
        self.settings(move |s| {
            if let Some(first) = models.first() {
                s.llm.model.clone_from(first);
            }
            s.llm.models = models;
        })
    }

    /// One more configured MCP server (see [`crate::mcp_peers::Peers`]).
    pub fn mcp_peer(self, server: McpServerConfig) -> Self {
        self.settings(move |s| s.mcp_servers.push(server))
    }

    /// Once the users are signed up, their first (the admin) adds this MCP server through
    /// the admin API (`POST /api/admin/mcp-servers`), asserting it was accepted; it is not
    /// waited for (see [`TestApp::wait_mcp`]).
    pub fn mcp_registered(mut self, server: Value) -> Self {
        self.mcp_registered.push(server);
        self
    }

    /// Runs on this (existing) database instead of a fresh one: a second server of the
    /// same deployment. Roles and budgets are then set by the first of `start_as`'s users,
    /// who must already be an admin there.
    pub fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// Starts from exactly these settings (their database included) instead of
    /// [`test_settings`] on a fresh database: for a test that builds its settings itself,
    /// e.g. a second server with another secret. [`AppBuilder::settings`] still applies on
    /// top; [`AppBuilder::database`] and [`AppBuilder::on_pgvector`] are then ignored.
    pub fn exact_settings(mut self, settings: Settings) -> Self {
        self.exact = Some(settings);
        self
    }

    /// Runs on a fresh database of the Postgres with pgvector ([`crate::pgvector`]: installed
    /// and started on first use) instead of the shared cluster, which has no pgvector. For
    /// the tests of knowledge. [`AppBuilder::database`] still wins when both are given.
    pub fn on_pgvector(mut self) -> Self {
        self.on_pgvector = true;
        self
    }

    /// Runs with this clock instead of the system's (see [`crate::TestClock`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Once the users are signed up, their first (the admin) puts this role
    /// (`PUT /api/admin/roles/{name}`), asserting it was accepted. Roles are put in the
    /// order given, before any budget.
    pub fn role(mut self, name: &str, body: Value) -> Self {
        self.roles.push((name.to_owned(), body));
        self
    }

    /// Once the users are signed up, their first (the admin) sets `user`'s own token budget
    /// (`None`: unlimited). `user` must be one of `start_as`'s names.
    pub fn budget(mut self, user: &str, tokens: Option<i64>) -> Self {
        self.budgets.push((user.to_owned(), tokens));
        self
    }

    /// Starts the server with no accounts.
    ///
    /// # Panics
    /// If roles, budgets or MCP servers to register were asked for: they need an admin, see
    /// [`AppBuilder::start_as`].
    pub async fn start(self) -> TestApp {
        assert!(
            self.roles.is_empty() && self.budgets.is_empty() && self.mcp_registered.is_empty(),
            "roles, budgets and registered MCP servers are set by an admin: use `start_as`"
        );
        let (app, []) = self.start_as([]).await;
        app
    }

    /// Starts the server and signs up `users` in order (with [`TestApp::signed_up`]): on a
    /// fresh database the first is an admin, the others members. Then, as that first user,
    /// puts the roles, sets the budgets and registers the MCP servers.
    pub async fn start_as<const N: usize>(self, users: [&str; N]) -> (TestApp, [Session; N]) {
        let mut settings = match (self.exact, self.database_url) {
            (Some(exact), _) => exact,
            (None, Some(url)) => test_settings(&url),
            (None, None) if self.on_pgvector => {
                test_settings(&crate::pgvector::fresh_database().await)
            }
            (None, None) => test_settings(&fresh_database().await),
        };
        for customise in self.customise {
            customise(&mut settings);
        }
        let clock = self.clock.unwrap_or_else(agentchat::budget::system_clock);
        let app = start_server(settings, clock).await;
        let mut sessions = Vec::with_capacity(N);
        for name in users {
            sessions.push(app.signed_up(name).await);
        }
        if !self.roles.is_empty() || !self.budgets.is_empty() || !self.mcp_registered.is_empty() {
            let admin = sessions
                .first()
                .expect("roles, budgets and MCP servers are set by the first user: name one")
                .access
                .clone();
            for (name, body) in self.roles {
                let r = app.put_role(&admin, &name, body).await;
                // 200 for a role that exists, 201 for a new one.
                assert!(
                    r.status() == 200 || r.status() == 201,
                    "role {name}: {} {}",
                    r.status(),
                    r.text().await.unwrap()
                );
            }
            for (user, tokens) in self.budgets {
                let i = users
                    .iter()
                    .position(|u| *u == user)
                    .unwrap_or_else(|| panic!("a budget for {user}, who is not signed up"));
                app.set_budget(&admin, sessions[i].user_id, tokens).await;
            }
            for server in self.mcp_registered {
                let r = app
                    .post_as(&admin, "/api/admin/mcp-servers")
                    .json(&server)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    r.status(),
                    201,
                    "MCP server {server}: {}",
                    r.text().await.unwrap()
                );
            }
        }
        let sessions = sessions
            .try_into()
            .unwrap_or_else(|s: Vec<Session>| panic!("{} sessions for {N} users", s.len()));
        (app, sessions)
    }
}
