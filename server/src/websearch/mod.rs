//! Web search as a governed tool (DESIGN §17). Providers (SearXNG, Brave, Tavily: one file
//! each, behind [`provider::SearchApi`]) come from `[[search_providers]]` and the admin API;
//! the `web_search` tool ([`tool`]) sends a query to the first allowed provider whose breaker
//! is closed and fails over to the next. Each role's rules ([`rules`]) pick providers and the
//! sites results and `http_get` fetches may show; each query is counted per user per day,
//! paid from the money budget and written to an audit row with its results ([`ledger`]),
//! whose ids are the `[W…]` refs an answer cites ([`citations`]).

pub mod brave;
pub mod breaker;
pub mod citations;
pub mod ledger;
pub mod privacy;
pub mod provider;
pub mod rules;
pub mod searxng;
pub mod store;
pub mod tavily;
pub mod tool;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use url::Url;
use uuid::Uuid;

use crate::budget::Clock;
use crate::config::{SearchProviderConfig, SearchSettings, Settings};
use crate::db::sealed::SealingKey;
use crate::db::Pool;
use crate::tools::net::UrlGuard;

/// Everything the tool and the fetch rules share; one per server process.
pub struct WebSearch {
    pub(crate) pool: Pool,
    pub(crate) settings: SearchSettings,
    /// The file's providers (read-only in the admin API).
    pub(crate) configured: Vec<SearchProviderConfig>,
    pub(crate) sealing: Option<SealingKey>,
    pub(crate) client: reqwest::Client,
    /// The `http_get` guard: result URLs it would refuse are never shown.
    pub(crate) guard: UrlGuard,
    pub(crate) breakers: breaker::Breakers,
    pub(crate) clock: Clock,
    pub(crate) process_id: Uuid,
}

impl WebSearch {
    pub fn new(
        settings: &Settings,
        pool: Pool,
        clock: Clock,
        process_id: Uuid,
    ) -> anyhow::Result<Arc<Self>> {
        // Providers are the admin's endpoints (a SearXNG instance is often internal): no SSRF
        // guard here, but no redirects and no proxy either.
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("AgentChat-web_search/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let s = &settings.search;
        Ok(Arc::new(Self {
            pool,
            settings: s.clone(),
            configured: settings.search_providers.clone(),
            sealing: SealingKey::of(settings),
            client,
            guard: UrlGuard::new(&settings.tools.http),
            breakers: breaker::Breakers::new(
                s.breaker_failures,
                Duration::from_secs(s.breaker_cooldown_secs),
            ),
            clock,
            process_id,
        }))
    }

    /// Every provider: the file's first, then the stored ones (a stored one named like a
    /// file's is ignored).
    pub async fn providers(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
    ) -> diesel::QueryResult<Vec<SearchProviderConfig>> {
        let stored = store::list(conn, self.sealing.as_ref()).await?;
        let mut all = self.configured.clone();
        for p in stored {
            if !all.iter().any(|c| c.name == p.name) {
                all.push(p);
            }
        }
        Ok(all)
    }

    /// Whether `name` comes from the file.
    pub fn is_configured(&self, name: &str) -> bool {
        self.configured.iter().any(|c| c.name == name)
    }

    /// Whether `name`'s breaker is open in this process.
    pub fn breaker_open(&self, name: &str) -> bool {
        self.breakers.is_open(name)
    }
}

#[async_trait]
impl crate::tools::builtin::http_get::FetchRules for WebSearch {
    async fn refuses(&self, user: Uuid, url: &Url) -> Option<String> {
        let mut conn = match self.pool.get().await {
            Ok(c) => c,
            Err(_) => return Some("the role's site rules cannot be read now".into()),
        };
        match rules::for_user(&mut conn, user).await {
            Ok(r) if r.is_open() => None,
            Ok(r) => r.refuses(url),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a role's search rules");
                Some("the role's site rules cannot be read now".into())
            }
        }
    }
}

impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearch")
            .field("configured", &self.configured.len())
            .finish_non_exhaustive()
    }
}
