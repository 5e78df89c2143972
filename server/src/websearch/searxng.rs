//! SearXNG's JSON API: `GET {base}/search?q=…&format=json[&time_range=…]` (the instance must
//! list `json` under `search.formats`). Results carry `url`, `title`, `content`, `engine`
//! and, for news-like engines, `publishedDate`.

use async_trait::async_trait;
use serde::Deserialize;

use super::provider::{plain, Endpoint, Failure, Hit, Query, SearchApi};

pub struct Searxng;

#[derive(Deserialize)]
struct Answer {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

#[async_trait]
impl SearchApi for Searxng {
    async fn search(&self, endpoint: &Endpoint<'_>, query: &Query) -> Result<Vec<Hit>, Failure> {
        let mut params = vec![
            ("q", query.text_with_site()),
            ("format", "json".to_owned()),
            ("safesearch", "1".to_owned()),
        ];
        if let Some(f) = query.freshness {
            params.push(("time_range", f.word().to_owned()));
        }
        let mut request = endpoint
            .client
            .get(format!("{}/search", endpoint.base()))
            .query(&params)
            .header(reqwest::header::ACCEPT, "application/json");
        let key = endpoint.api_key();
        if !key.is_empty() {
            // An instance behind a proxy that wants a token.
            request = request.bearer_auth(key);
        }
        let answer: Answer = endpoint.json(request).await?;
        Ok(answer
            .results
            .into_iter()
            .filter_map(|r| {
                Some(Hit {
                    url: r.url?,
                    title: plain(&r.title.unwrap_or_default()),
                    snippet: plain(&r.content.unwrap_or_default()),
                    published: r.published_date.filter(|d| !d.is_empty()),
                })
            })
            .take(query.max_results)
            .collect())
    }
}
