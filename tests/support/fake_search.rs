//! Fake web search providers speaking their real wire formats: SearXNG's JSON API
//! (`GET /search?format=json`), Brave Search (`GET /res/v1/web/search`, key in
//! `X-Subscription-Token`) and Tavily (`POST /search`, bearer key, JSON body). Each checks
//! the request as its vendor would (path, format, key: 401 otherwise), records it, and can
//! be told to misbehave: an HTTP status, garbage, a huge body, or a slow answer.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Which vendor a fake speaks as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Searxng,
    Brave,
    Tavily,
}

/// What the fake answers next.
#[derive(Clone, Debug)]
pub enum Answer {
    /// 200 with these results, in the vendor's format.
    Results(Vec<Found>),
    /// This status with a small JSON error body.
    Status(u16),
    /// 200 with a body that is not the vendor's JSON.
    Garbage,
    /// 200 with `n` bytes, no `content-length` (read until the connection closes).
    Huge(usize),
    /// Wait this long, then answer the results.
    Slow(Duration, Vec<Found>),
}

/// One result the fake returns.
#[derive(Clone, Debug)]
pub struct Found {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// A result from three strings.
pub fn found(title: &str, url: &str, snippet: &str) -> Found {
    Found {
        title: title.into(),
        url: url.into(),
        snippet: snippet.into(),
    }
}

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter, decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        let url = url::Url::parse(&format!("http://x{}", self.target)).ok()?;
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// A running fake provider.
pub struct FakeSearch {
    pub addr: SocketAddr,
    pub vendor: Vendor,
    pub key: String,
    answer: Arc<Mutex<Answer>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeSearch {
    /// A fake `vendor` that wants `key` (ignored by SearXNG) and answers `answer`.
    pub async fn start(vendor: Vendor, key: &str, answer: Answer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let answer = Arc::new(Mutex::new(answer));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, s, k) = (answer.clone(), seen.clone(), key.to_owned());
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (a, s, k) = (a.clone(), s.clone(), k.clone());
                tokio::spawn(async move { serve(sock, vendor, &k, &a, &s).await });
            }
        });
        Self {
            addr,
            vendor,
            key: key.to_owned(),
            answer,
            seen,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it answers from now on.
    pub fn set(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The `[[search_providers]]` entry for it.
    pub fn entry(&self, name: &str) -> Value {
        let kind = match self.vendor {
            Vendor::Searxng => "searxng",
            Vendor::Brave => "brave",
            Vendor::Tavily => "tavily",
        };
        let mut e =
            json!({"name": name, "kind": kind, "base_url": self.base_url(), "timeout_secs": 2});
        if self.vendor != Vendor::Searxng {
            e["api_key"] = json!(self.key);
        }
        e
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some(Seen {
        method,
        target,
        headers,
        body,
    })
}

async fn serve(
    mut sock: tokio::net::TcpStream,
    vendor: Vendor,
    key: &str,
    answer: &Mutex<Answer>,
    seen: &Mutex<Vec<Seen>>,
) {
    let Some(req) = read_request(&mut sock).await else {
        return;
    };
    seen.lock().unwrap().push(req.clone());
    let path = req.target.split('?').next().unwrap_or("").to_owned();
    let authorised = match vendor {
        Vendor::Searxng => {
            req.method == "GET"
                && path == "/search"
                && req.param("format").as_deref() == Some("json")
        }
        Vendor::Brave => {
            req.method == "GET"
                && path == "/res/v1/web/search"
                && req.header("x-subscription-token") == Some(key)
        }
        Vendor::Tavily => {
            req.method == "POST"
                && path == "/search"
                && req.header("authorization") == Some(&format!("Bearer {key}"))
        }
    };
    let current = answer.lock().unwrap().clone();
    let (status, body) = if !authorised {
        (
            401,
            json!({"error": "unauthorized or wrong request"}).to_string(),
        )
    } else {
        match current {
            Answer::Results(found) => (200, format(vendor, &req, &found)),
            Answer::Slow(d, found) => {
                tokio::time::sleep(d).await;
                (200, format(vendor, &req, &found))
            }
            Answer::Status(code) => (code, json!({"error": "upstream trouble"}).to_string()),
            Answer::Garbage => (
                200,
                "<html>Service temporarily unavailable</html>".to_owned(),
            ),
            Answer::Huge(n) => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let block = vec![b' '; 64 * 1024];
                let mut sent = 0;
                while sent < n {
                    let len = block.len().min(n - sent);
                    if sock.write_all(&block[..len]).await.is_err() {
                        return;
                    }
                    sent += len;
                }
                let _ = sock.shutdown().await;
                return;
            }
        }
    };
    let reason = if status == 200 { "OK" } else { "Error" };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.write_all(response.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// The vendor's answer body for `found`.
fn format(vendor: Vendor, req: &Seen, found: &[Found]) -> String {
    match vendor {
        Vendor::Searxng => json!({
            "query": req.param("q").unwrap_or_default(),
            "number_of_results": 0,
            "results": found.iter().map(|f| json!({
                "url": f.url, "title": f.title, "content": f.snippet,
                "engine": "duckduckgo", "engines": ["duckduckgo", "brave"],
                "positions": [1], "score": 1.5, "category": "general",
                "parsed_url": ["https", "example.com", "/", "", "", ""],
                "publishedDate": null, "thumbnail": null,
            })).collect::<Vec<_>>(),
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
            "unresponsive_engines": [],
        })
        .to_string(),
        Vendor::Brave => json!({
            "type": "search",
            "query": {"original": req.param("q").unwrap_or_default(), "more_results_available": false},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
            "web": {
                "type": "search",
                "family_friendly": true,
                "results": found.iter().map(|f| json!({
                    "type": "search_result", "subtype": "generic", "title": f.title,
                    "url": f.url, "description": format!("<strong>{}</strong>", f.snippet),
                    "is_source_local": false, "is_source_both": false, "language": "en",
                    "family_friendly": true, "page_age": "2026-11-30T08:00:00",
                    "age": "November 30, 2026",
                    "profile": {"name": "Example", "url": f.url, "long_name": "example.com"},
                    "meta_url": {"scheme": "https", "netloc": "example.com", "hostname": "example.com"},
                })).collect::<Vec<_>>(),
            },
        })
        .to_string(),
        Vendor::Tavily => json!({
            "query": req.json()["query"],
            "follow_up_questions": null,
            "answer": null,
            "images": [],
            "results": found.iter().map(|f| json!({
                "title": f.title, "url": f.url, "content": f.snippet, "score": 0.87,
                "raw_content": null,
            })).collect::<Vec<_>>(),
            "response_time": 0.42,
        })
        .to_string(),
    }
}
