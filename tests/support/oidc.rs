//! A real OpenID provider for the SSO tests (npm's certified `oidc-provider`, run by node
//! from `tests/oidc/provider.mjs`, installed by `tests/oidc/install.sh`), and a minimal
//! browser: a cookie jar per host that follows redirects by hand, so a test can stop at
//! any step and tamper with it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

pub const CLIENT_ID: &str = "agentchat";
pub const CLIENT_SECRET: &str = "agentchat-test-secret";

/// The provider process (killed when dropped) and its issuer URL.
pub struct OidcProvider {
    _child: tokio::process::Child,
    pub issuer: String,
    http: reqwest::Client,
}

fn install_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oidc");
        let out = std::process::Command::new("bash")
            .arg(dir.join("install.sh"))
            .output()
            .expect("running tests/oidc/install.sh");
        assert!(
            out.status.success(),
            "tests/oidc/install.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .clone()
}

impl OidcProvider {
    pub async fn start() -> Self {
        let dir = install_dir();
        let mut child = tokio::process::Command::new("node")
            .arg(dir.join("provider.mjs"))
            .current_dir(&dir)
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node tests/oidc/provider.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("READY ") {
                    return issuer.to_owned();
                }
            }
            panic!("the OpenID provider exited before it was ready");
        })
        .await
        .expect("the OpenID provider did not start");
        Self {
            _child: child,
            issuer,
            http: reqwest::Client::new(),
        }
    }

    async fn control(&self, path: &str, body: Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204, "{path}: {}", r.text().await.unwrap());
    }

    /// Registers the client with the server's callback URL and the ID tokens' lifetime and
    /// delay (an ID token that arrives after it expired).
    pub async fn configure(&self, redirect_uri: &str, id_token_ttl: u64, token_delay_ms: u64) {
        self.control(
            "/test/configure",
            json!({"redirect_uris": [redirect_uri], "id_token_ttl": id_token_ttl,
                   "token_delay_ms": token_delay_ms}),
        )
        .await;
    }

    /// Who the next sign-in at the provider is.
    pub async fn account(&self, sub: &str, username: &str, groups: &[&str]) {
        self.control(
            "/test/account",
            json!({"sub": sub, "preferred_username": username, "groups": groups,
                   "email": format!("{username}@example.com")}),
        )
        .await;
    }

    /// The next sign-in is refused by the user at the provider (`access_denied`).
    pub async fn deny_next(&self, sub: &str) {
        self.control("/test/account", json!({"sub": sub, "deny": true}))
            .await;
    }

    /// A new signing key; the old one is no longer published.
    pub async fn rotate_keys(&self) {
        self.control("/test/rotate", json!({})).await;
    }
}

/// A browser: cookies per `host:port`, redirects followed by hand.
#[derive(Default)]
pub struct Browser {
    jar: HashMap<String, HashMap<String, String>>,
    http: Option<reqwest::Client>,
}

/// Where a step of the flow ended.
pub struct Step {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
    pub set_cookies: Vec<String>,
    pub url: String,
}

fn host_of(url: &str) -> String {
    let u = url::Url::parse(url).unwrap();
    format!(
        "{}:{}",
        u.host_str().unwrap(),
        u.port_or_known_default().unwrap()
    )
}

impl Browser {
    pub fn new() -> Self {
        Self {
            jar: HashMap::new(),
            http: Some(
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap(),
            ),
        }
    }

    pub fn cookie(&self, url: &str, name: &str) -> Option<String> {
        self.jar.get(&host_of(url))?.get(name).cloned()
    }

    /// One GET, remembering the cookies it sets.
    pub async fn get(&mut self, url: &str) -> Step {
        let host = host_of(url);
        let cookies = self
            .jar
            .get(&host)
            .map(|c| {
                c.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default();
        let mut req = self.http.as_ref().unwrap().get(url);
        if !cookies.is_empty() {
            req = req.header("cookie", cookies);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let set_cookies: Vec<String> = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let jar = self.jar.entry(host).or_default();
        for sc in &set_cookies {
            let pair = sc.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            let removed = value.is_empty()
                || sc.to_ascii_lowercase().contains("max-age=0")
                || sc.to_ascii_lowercase().contains("1970");
            if removed {
                jar.remove(name.trim());
            } else {
                jar.insert(name.trim().to_owned(), value.to_owned());
            }
        }
        let location = r.headers().get("location").map(|l| {
            let l = l.to_str().unwrap();
            url::Url::parse(url).unwrap().join(l).unwrap().to_string()
        });
        Step {
            status,
            location,
            body: r.text().await.unwrap(),
            set_cookies,
            url: url.to_owned(),
        }
    }

    /// Follows redirects from `url` until one leads to `stop_prefix` (not requested) or a
    /// page answers; returns that URL, or the page.
    pub async fn follow_until(&mut self, url: &str, stop_prefix: &str) -> Result<String, Step> {
        let mut next = url.to_owned();
        for _ in 0..20 {
            if next.starts_with(stop_prefix) {
                return Ok(next);
            }
            let step = self.get(&next).await;
            match step.location.clone() {
                Some(l) if (300..400).contains(&step.status) => next = l,
                _ => return Err(step),
            }
        }
        panic!("too many redirects from {url}");
    }
}
