//! Tests for `http_get` against local raw-TCP HTTP servers. A "canary"
//! server counts connections and must never be reached.

use super::*;
use crate::tools::builtin::test_support::ctx;
use crate::tools::{Outcome, Registry};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    delay: Duration,
}

fn reply(status: u16, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> Reply {
    Reply {
        status,
        headers: content_type
            .map(|ct| vec![("Content-Type", ct.to_owned())])
            .unwrap_or_default(),
        body: body.into(),
        delay: Duration::ZERO,
    }
}

fn redirect(location: &str) -> Reply {
    Reply {
        status: 302,
        headers: vec![("Location", location.to_owned())],
        body: Vec::new(),
        delay: Duration::ZERO,
    }
}

type Handler = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

/// A minimal HTTP/1.1 server; counts accepted connections.
async fn spawn_server(bind: &str, handler: Handler) -> Option<Server> {
    let listener = TcpListener::bind(bind).await.ok()?;
    let addr = listener.local_addr().ok()?;
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counter.fetch_add(1, SeqCst);
            let handler = Arc::clone(&handler);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16_384 {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&buf).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let r = handler(path);
                tokio::time::sleep(r.delay).await;
                let mut head = format!(
                    "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                    r.status,
                    r.body.len()
                );
                for (k, v) in &r.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&r.body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Some(Server { addr, hits })
}

async fn canary(bind: &str) -> Option<Server> {
    spawn_server(bind, Arc::new(|_| reply(200, Some("text/plain"), "canary"))).await
}

const PAGE: &str = "<html><head><title>Test page</title><style>p{color:red}</style>\
    <script>alert('x')</script></head><body><h1>Hello &amp; welcome</h1>\
    <p>Some   <b>bold</b>\n text.</p></body></html>";

fn app(path: &str) -> Reply {
    if let Some(to) = path.strip_prefix("/redirect?to=") {
        return redirect(to);
    }
    if let Some(n) = path.strip_prefix("/chain/") {
        let n: u32 = n.parse().unwrap_or(0);
        return if n == 0 {
            reply(200, Some("text/plain"), "done")
        } else {
            redirect(&format!("/chain/{}", n - 1))
        };
    }
    match path {
        "/html" => reply(200, Some("text/html; charset=utf-8"), PAGE),
        "/plain" => reply(200, Some("text/plain; charset=utf-8"), "just text"),
        "/json" => reply(200, Some("application/problem+json"), r#"{"a":1}"#),
        "/big" => reply(200, Some("text/plain"), "ab".repeat(512 * 1024)),
        "/slow" => Reply {
            delay: Duration::from_secs(30),
            ..reply(200, Some("text/plain"), "late")
        },
        "/png" => reply(200, Some("image/png"), vec![0x89, b'P', b'N', b'G', 0, 0]),
        "/untyped-text" => reply(200, None, "hello"),
        "/untyped-html" => reply(200, None, "<!DOCTYPE html><p>hi</p>"),
        "/untyped-bin" => reply(200, None, vec![0u8, 1, 2, 255]),
        "/latin1" => reply(
            200,
            Some("text/plain; charset=ISO-8859-1"),
            b"caf\xe9".to_vec(),
        ),
        "/to-plain" => redirect("/plain"),
        _ => reply(404, Some("text/plain"), "nope"),
    }
}

fn config_for(allowed: &Server) -> HttpToolConfig {
    HttpToolConfig {
        timeout: Duration::from_secs(3),
        allow_private_host_ports: vec![allowed.addr.to_string()],
        ..HttpToolConfig::default()
    }
}

async fn get(tool: &HttpGet, url: &str) -> Result<Value, ToolError> {
    tool.call(&ctx(), json!({ "url": url })).await
}

#[tokio::test]
async fn private_targets_are_refused_and_never_contacted() {
    let canary4 = canary("127.0.0.1:0").await.unwrap();
    let canary6 = canary("[::1]:0").await;
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let tool = HttpGet::new(&config_for(&allowed));
    let c = canary4.addr.port();
    let c6 = canary6.as_ref().map_or(c, |s| s.addr.port());

    let targets = vec![
        format!("http://127.0.0.1:{c}/"),
        format!("http://localhost:{c}/"),
        format!("http://LOCALHOST.:{c}/"),
        format!("http://foo.localhost:{c}/"),
        format!("http://vm:{c}/"),
        format!("http://[::1]:{c6}/"),
        format!("http://[::ffff:127.0.0.1]:{c}/"),
        format!("http://[::ffff:7f00:1]:{c}/"),
        format!("http://[::]:{c6}/"),
        format!("http://0x7f000001:{c}/"),
        format!("http://2130706433:{c}/"),
        format!("http://127.1:{c}/"),
        format!("http://0177.0.0.1:{c}/"),
        format!("http://0.0.0.0:{c}/"),
        format!("http://127.0.0.1.:{c}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://100.64.0.1/".to_owned(),
        "http://172.16.0.1/".to_owned(),
        "http://192.168.0.1/".to_owned(),
        "http://[fe80::1]/".to_owned(),
        "http://[fd00::1]/".to_owned(),
        "http://[ff02::1]/".to_owned(),
        "http://255.255.255.255/".to_owned(),
        "http://192.0.2.1/".to_owned(),
        "https://127.0.0.1:443/".to_owned(),
    ];
    let mut redirects = 0;
    for target in &targets {
        for url in [
            target.clone(),
            format!("http://{}/redirect?to={target}", allowed.addr),
        ] {
            let started = Instant::now();
            let err = get(&tool, &url).await.unwrap_err();
            assert_eq!(err.code(), "not_permitted", "{url}: {err}");
            assert!(started.elapsed() < Duration::from_secs(2), "{url}");
        }
        redirects += 1;
    }
    // A redirect to the allowed host but another port is refused as well.
    let url = format!("http://{}/redirect?to=http://127.0.0.1:{c}/", allowed.addr);
    let err = get(&tool, &url).await.unwrap_err();
    assert!(err.to_string().contains("redirect refused"), "{err}");
    redirects += 1;

    assert_eq!(canary4.hits.load(SeqCst), 0, "IPv4 canary was contacted");
    if let Some(c6) = &canary6 {
        assert_eq!(c6.hits.load(SeqCst), 0, "IPv6 canary was contacted");
    }
    // The redirecting server itself was reached each time (the redirect
    // responses were really produced and then refused).
    assert_eq!(allowed.hits.load(SeqCst), redirects);
}

#[tokio::test]
async fn resolver_is_wired_into_the_client() {
    // Bypass the URL guard: the client's own resolver must refuse names.
    let canary4 = canary("127.0.0.1:0").await.unwrap();
    let tool = HttpGet::new(&HttpToolConfig::default());
    let client = tool.client.as_ref().unwrap();
    for host in ["localhost", "vm", "runsc"] {
        let err = client
            .get(format!("http://{host}:{}/", canary4.addr.port()))
            .send()
            .await
            .unwrap_err();
        let mapped = map_error(err);
        assert_eq!(mapped.code(), "not_permitted", "{host}: {mapped}");
    }
    assert_eq!(canary4.hits.load(SeqCst), 0);
}

#[tokio::test]
async fn allowed_pair_happy_path() {
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let tool = HttpGet::new(&config_for(&allowed));
    let base = format!("http://{}", allowed.addr);
    let v = get(&tool, &format!("{base}/html")).await.unwrap();
    assert_eq!(v["status"], 200);
    assert_eq!(v["content_type"], "text/html; charset=utf-8");
    assert_eq!(v["url"], format!("{base}/html"));
    assert_eq!(v["text"], "Test page\n\nHello & welcome\n\nSome bold text.");
    assert_eq!(v["truncated"], false);

    let v = get(&tool, &format!("{base}/to-plain")).await.unwrap();
    assert_eq!(v["url"], format!("{base}/plain"));
    assert_eq!(v["text"], "just text");
    let v = get(&tool, &format!("{base}/json")).await.unwrap();
    assert_eq!(v["text"], r#"{"a":1}"#);
    let v = get(&tool, &format!("{base}/missing")).await.unwrap();
    assert_eq!(
        (v["status"].clone(), v["text"].clone()),
        (json!(404), json!("nope"))
    );
    let v = get(&tool, &format!("{base}/untyped-text")).await.unwrap();
    assert_eq!(v["text"], "hello");
    assert_eq!(v["content_type"], Value::Null);
    let v = get(&tool, &format!("{base}/untyped-html")).await.unwrap();
    assert_eq!(v["text"], "hi");
    let v = get(&tool, &format!("{base}/latin1")).await.unwrap();
    assert_eq!(v["text"], "café");
    for bin in ["/png", "/untyped-bin"] {
        let err = get(&tool, &format!("{base}{bin}")).await.unwrap_err();
        assert!(err.to_string().starts_with("not a text response"), "{err}");
    }
}

#[tokio::test]
async fn redirect_limit() {
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let tool = HttpGet::new(&config_for(&allowed));
    let base = format!("http://{}", allowed.addr);
    let v = get(&tool, &format!("{base}/chain/5")).await.unwrap();
    assert_eq!(v["text"], "done");
    let err = get(&tool, &format!("{base}/chain/6")).await.unwrap_err();
    assert!(
        err.to_string().contains("too many redirects (limit 5)"),
        "{err}"
    );
    assert_eq!(err.code(), "failed");
}

#[tokio::test]
async fn size_caps_truncate() {
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let base = format!("http://{}", allowed.addr);
    let tool = HttpGet::new(&config_for(&allowed));
    let v = tool
        .call(
            &ctx(),
            json!({"url": format!("{base}/big"), "max_bytes": 1000}),
        )
        .await
        .unwrap();
    assert_eq!(v["text"].as_str().unwrap().len(), 1000);
    assert_eq!(v["truncated"], true);
    // Default caps: text is cut to max_text_bytes.
    let v = get(&tool, &format!("{base}/big")).await.unwrap();
    assert_eq!(v["text"].as_str().unwrap().len(), 12_000);
    assert_eq!(v["truncated"], true);
    // The model cannot raise the server's download cap.
    let tool = HttpGet::new(&HttpToolConfig {
        max_bytes: 100,
        ..config_for(&allowed)
    });
    let v = tool
        .call(
            &ctx(),
            json!({"url": format!("{base}/big"), "max_bytes": 100_000}),
        )
        .await
        .unwrap();
    assert_eq!(v["text"].as_str().unwrap().len(), 100);
    let v = get(&tool, &format!("{base}/plain")).await.unwrap();
    assert_eq!(v["truncated"], false);
}

#[tokio::test]
async fn timeout_fires() {
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let tool = HttpGet::new(&HttpToolConfig {
        timeout: Duration::from_millis(500),
        ..config_for(&allowed)
    });
    let started = Instant::now();
    let err = get(&tool, &format!("http://{}/slow", allowed.addr))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[tokio::test]
async fn domain_allowlist_narrows() {
    let allowed = spawn_server("127.0.0.1:0", Arc::new(app)).await.unwrap();
    let url = format!("http://{}/plain", allowed.addr);
    let narrow = HttpGet::new(&HttpToolConfig {
        allowed_domains: vec!["example.org".into()],
        ..config_for(&allowed)
    });
    let err = get(&narrow, &url).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::NotPermitted("host '127.0.0.1' is not in the allowed domains".into())
    );
    assert_eq!(allowed.hits.load(SeqCst), 0);
    let listed = HttpGet::new(&HttpToolConfig {
        allowed_domains: vec!["example.org".into(), "127.0.0.1".into()],
        ..config_for(&allowed)
    });
    assert_eq!(get(&listed, &url).await.unwrap()["text"], "just text");
    // Listing a private host in allowed_domains alone does not unblock it.
    let no_pair = HttpGet::new(&HttpToolConfig {
        allowed_domains: vec!["127.0.0.1".into()],
        ..HttpToolConfig::default()
    });
    assert_eq!(
        get(&no_pair, &url).await.unwrap_err().code(),
        "not_permitted"
    );
}

#[tokio::test]
async fn argument_errors_and_registry_outcome() {
    let tool = HttpGet::new(&HttpToolConfig::default());
    for (args, needle) in [
        (json!({"url": "not a url"}), "url: not a valid absolute URL"),
        (json!({"url": "ftp://example.com/"}), "only http and https"),
        (json!({"url": "file:///etc/passwd"}), "only http and https"),
        (json!({"url": "http://x.org", "extra": 1}), "extra"),
    ] {
        let err = tool.call(&ctx(), args).await.unwrap_err();
        assert_eq!(err.code(), "invalid_arguments");
        assert!(err.to_string().contains(needle), "{err}");
    }
    let mut r = Registry::new();
    r.register(Arc::new(tool)).unwrap();
    let call = r
        .execute(&ctx(), "http_get", r#"{"url": "http://127.0.0.1/"}"#)
        .await;
    assert_eq!(call.outcome, Outcome::Refused);
    let call = r
        .execute(
            &ctx(),
            "http_get",
            r#"{"url": "http://x.org", "max_bytes": 0}"#,
        )
        .await;
    assert_eq!(call.error_code, Some("invalid_arguments"));
}

#[test]
fn classification_and_decoding() {
    assert_eq!(classify(None), None);
    assert_eq!(classify(Some("")), None);
    assert_eq!(classify(Some("TEXT/HTML; charset=x")), Some(BodyKind::Html));
    assert_eq!(classify(Some("application/ld+json")), Some(BodyKind::Text));
    assert_eq!(
        classify(Some("application/octet-stream")),
        Some(BodyKind::Binary)
    );
    assert_eq!(classify(Some("application/pdf")), Some(BodyKind::Binary));
    assert_eq!(sniff(b"plain"), BodyKind::Text);
    assert_eq!(sniff(b"  <HTML>"), BodyKind::Html);
    assert_eq!(sniff(b"a\0b"), BodyKind::Binary);
    // A multi-byte char cut by the size cap is dropped, not replaced.
    assert_eq!(decode("né".as_bytes()[..2].as_ref(), None), "n");
    assert_eq!(
        decode(b"caf\xe9", Some("text/plain; charset=\"latin1\"")),
        "café"
    );
    assert_eq!(decode(b"a\xffb", None), "a\u{fffd}b");
}
