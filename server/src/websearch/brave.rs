//! Brave Search API: `GET {base}/res/v1/web/search?q=…&count=…[&freshness=pd|pw|pm|py]`
//! with the key in `X-Subscription-Token`. Web results are under `web.results`, each with
//! `title`, `url`, `description` (matches marked with `<strong>`) and `page_age` / `age`.

use async_trait::async_trait;
use serde::Deserialize;

use super::provider::{plain, Endpoint, Failure, Freshness, Hit, Query, SearchApi};

pub struct Brave;

/// Brave returns at most 20 web results a call.
const MAX_COUNT: usize = 20;

#[derive(Deserialize)]
struct Answer {
    /// Absent when nothing was found.
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    title: String,
    url: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    page_age: Option<String>,
    #[serde(default)]
    age: Option<String>,
}

fn freshness(f: Freshness) -> &'static str {
    match f {
        Freshness::Day => "pd",
        Freshness::Week => "pw",
        Freshness::Month => "pm",
        Freshness::Year => "py",
    }
}

#[async_trait]
impl SearchApi for Brave {
    async fn search(&self, endpoint: &Endpoint<'_>, query: &Query) -> Result<Vec<Hit>, Failure> {
        let mut params = vec![
            ("q", query.text_with_site()),
            ("count", query.max_results.clamp(1, MAX_COUNT).to_string()),
        ];
        if let Some(f) = query.freshness {
            params.push(("freshness", freshness(f).to_owned()));
        }
        let request = endpoint
            .client
            .get(format!("{}/res/v1/web/search", endpoint.base()))
            .query(&params)
            .header(reqwest::header::ACCEPT, "application/json")
            .header("X-Subscription-Token", endpoint.api_key());
        let answer: Answer = endpoint.json(request).await?;
        Ok(answer
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|r| Hit {
                title: plain(&r.title),
                url: r.url,
                snippet: plain(&r.description.unwrap_or_default()),
                published: r.page_age.or(r.age).filter(|d| !d.is_empty()),
            })
            .take(query.max_results)
            .collect())
    }
}
