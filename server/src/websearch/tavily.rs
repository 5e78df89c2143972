//! Tavily: `POST {base}/search` with `Authorization: Bearer tvly-…` and a JSON body
//! (`query`, `max_results`, `topic`, `time_range`, `include_domains`). Results carry
//! `title`, `url`, `content`, `score` and, for news, `published_date`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::provider::{plain, Endpoint, Failure, Hit, Query, SearchApi};

pub struct Tavily;

/// Tavily returns at most 20 results a call.
const MAX_RESULTS: usize = 20;

#[derive(Serialize)]
struct Ask<'a> {
    query: &'a str,
    max_results: usize,
    topic: &'static str,
    search_depth: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_range: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include_domains: Vec<&'a str>,
}

#[derive(Deserialize)]
struct Answer {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    title: String,
    url: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    published_date: Option<String>,
}

#[async_trait]
impl SearchApi for Tavily {
    async fn search(&self, endpoint: &Endpoint<'_>, query: &Query) -> Result<Vec<Hit>, Failure> {
        let ask = Ask {
            query: &query.text,
            max_results: query.max_results.clamp(1, MAX_RESULTS),
            topic: "general",
            search_depth: "basic",
            time_range: query.freshness.map(|f| f.word()),
            include_domains: query.site.as_deref().into_iter().collect(),
        };
        let request = endpoint
            .client
            .post(format!("{}/search", endpoint.base()))
            .bearer_auth(endpoint.api_key())
            .json(&ask);
        let answer: Answer = endpoint.json(request).await?;
        Ok(answer
            .results
            .into_iter()
            .map(|r| Hit {
                title: plain(&r.title),
                url: r.url,
                snippet: plain(&r.content.unwrap_or_default()),
                published: r.published_date.filter(|d| !d.is_empty()),
            })
            .take(query.max_results)
            .collect())
    }
}
