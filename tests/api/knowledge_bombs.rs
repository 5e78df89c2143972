//! Hostile documents through every route that takes them into a collection (issue 41,
//! findings 1 and 2): a PDF whose page tree is 30,000 levels deep (pdf-extract follows
//! `/Parent` by recursion: a stack overflow aborted the whole server) and a 25 KB PDF whose
//! content inflates to 16 MiB of `(a)Tj` (+1.5 GiB and minutes of CPU inside the server).
//! Each must end `failed` with its reason, while the server keeps answering and its memory
//! (this process: the server runs in the test) stays flat. The run-on text bomb (1 MiB of
//! `x`) must settle one way or the other in bounded time.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use crate::knowledge_support::{collection, on_fake, send, upload};

/// A PDF of `objects` (object `i + 1` is `objects[i]`; object 1 is the catalog).
fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let size = objects.len() + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

fn deflated(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// One page whose `/Parent` chain is `levels` deep, with no `/Resources` anywhere: a
/// reader looking them up walks the whole chain.
pub fn deep_page_tree(levels: usize) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 5 0 R /Contents 4 0 R >>".to_vec(),
        stream("", b"BT (deep) Tj ET"),
    ];
    for level in 0..levels {
        let parent = if level + 1 < levels {
            format!(" /Parent {} 0 R", 5 + level + 1)
        } else {
            String::new()
        };
        objects.push(format!("<< /Type /Pages{parent} >>").into_bytes());
    }
    pdf(&objects)
}

/// `pages` pages sharing one deflated content stream: `(a)Tj` repeated to `bytes` once
/// inflated.
pub fn operator_flood(pages: usize, bytes: usize) -> Vec<u8> {
    let mut content = b"BT /F1 12 Tf 72 720 Td ".to_vec();
    while content.len() < bytes {
        content.extend_from_slice(b"(a)Tj ");
    }
    content.extend_from_slice(b"ET");
    let kids: Vec<String> = (0..pages).map(|p| format!("{} 0 R", 5 + p)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        )
        .into_bytes(),
        stream("/Filter /FlateDecode", &deflated(&content)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    for _ in 0..pages {
        objects.push(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
               /Resources << /Font << /F1 4 0 R >> >> /Contents 3 0 R >>"
                .to_vec(),
        );
    }
    pdf(&objects)
}

/// Resident set size of this process (the server runs in it), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Adds `bytes` as `name` through both routes: uploaded to the collection, and written to
/// the workspace then added from there (as `ws-{name}`). Returns the collection's names.
async fn add_both_ways(
    app: &TestApp,
    token: &str,
    c: &str,
    name: &str,
    bytes: Vec<u8>,
) -> [String; 2] {
    let (status, body) = upload(app, token, c, name, bytes.clone()).await;
    assert_eq!(status, 202, "{name}: {body}");
    let ws = format!("ws-{name}");
    let r = app
        .client
        .put(app.url(&format!("/api/files/{ws}")))
        .bearer_auth(token)
        .body(bytes)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{ws}: {}", r.status());
    let (status, body) = send(
        app,
        Method::POST,
        token,
        &format!("/api/collections/{c}/files"),
        Some(json!({ "workspace_path": ws })),
    )
    .await;
    assert_eq!(status, 202, "{ws}: {body}");
    [name.to_owned(), ws]
}

/// Watches the server while hostile files are read: every 200 ms `/healthz` must answer
/// within 5 s, and the highest RSS is kept.
struct Watch {
    stop: Arc<AtomicBool>,
    peak_kib: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Watch {
    fn start(app: &TestApp) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_kib = Arc::new(AtomicU64::new(rss_kib()));
        let (client, url) = (app.client.clone(), app.url("/healthz"));
        let (s, p) = (stop.clone(), peak_kib.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                let asked = client
                    .get(&url)
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await;
                match asked {
                    Ok(r) if r.status().is_success() => {}
                    other => return Err(format!("/healthz: {other:?}")),
                }
                p.fetch_max(rss_kib(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(())
        });
        Watch {
            stop,
            peak_kib,
            task,
        }
    }

    /// The peak RSS seen, in KiB, once the server answered every time.
    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap().unwrap();
        self.peak_kib.load(Ordering::Relaxed).max(rss_kib())
    }
}

/// The collection's files by name, once none of `names` is in progress (panics after `within`).
async fn settle(
    app: &TestApp,
    token: &str,
    c: &str,
    names: &[String],
    within: Duration,
) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let (_, listed) = send(
            app,
            Method::GET,
            token,
            &format!("/api/collections/{c}"),
            None,
        )
        .await;
        let files = listed["files"].as_array().cloned().unwrap_or_default();
        let found: Vec<Value> = names
            .iter()
            .filter_map(|n| files.iter().find(|f| f["name"] == n.as_str()).cloned())
            .collect();
        let done = |f: &Value| f["state"] == "ready" || f["state"] == "failed";
        if found.len() == names.len() && found.iter().all(done) {
            return found;
        }
        assert!(
            start.elapsed() < within,
            "not settled within {within:?}: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn pdf_bombs_fail_with_their_reason_and_the_server_stays_up_and_small() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake).start_as(["ann"]).await;
    let c = collection(&app, &ann.access, "Bombs").await;
    let tree = deep_page_tree(30_000);
    let flood = operator_flood(1, 16 << 20);
    assert!(
        flood.len() < 64 << 10,
        "the flood is small: {}",
        flood.len()
    );

    let before_kib = rss_kib();
    let watch = Watch::start(&app);
    let mut names = Vec::new();
    names.extend(add_both_ways(&app, &ann.access, &c, "tree.pdf", tree).await);
    names.extend(add_both_ways(&app, &ann.access, &c, "flood.pdf", flood).await);
    let files = settle(&app, &ann.access, &c, &names, Duration::from_secs(120)).await;
    let peak_kib = watch.finish().await;

    for f in &files {
        assert_eq!(f["state"], "failed", "{f}");
        assert_eq!(f["error_code"], "pdf_too_complex", "{f}");
    }
    let tree_error = files[0]["error"].as_str().unwrap();
    assert!(tree_error.contains("page tree"), "{tree_error}");
    let flood_error = files[2]["error"].as_str().unwrap();
    assert!(flood_error.contains("drawing operations"), "{flood_error}");
    let grown_mib = peak_kib.saturating_sub(before_kib) / 1024;
    assert!(grown_mib < 200, "the server grew by {grown_mib} MiB");

    // Still serving: a normal file is indexed after the bombs.
    upload(
        &app,
        &ann.access,
        &c,
        "fine.txt",
        b"An ordinary note about tea.".to_vec(),
    )
    .await;
    let fine = settle(
        &app,
        &ann.access,
        &c,
        &["fine.txt".to_owned()],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(fine[0]["state"], "ready", "{}", fine[0]);
}

/// Extraction children of this process (the server's), by pid.
fn extraction_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(me.as_str())
                && String::from_utf8_lossy(&cmdline).contains("extract-document")
        })
        .collect()
}

#[tokio::test]
async fn a_file_past_the_memory_limit_fails_and_removing_a_file_stops_its_reader() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| s.knowledge.extract_memory_mb = 256)
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Limits").await;
    // Within the operator budget (1.9 M on one page), beyond 256 MiB of parser memory.
    upload(
        &app,
        &ann.access,
        &c,
        "heavy.pdf",
        operator_flood(1, 11 << 20),
    )
    .await;
    let f = settle(
        &app,
        &ann.access,
        &c,
        &["heavy.pdf".to_owned()],
        Duration::from_secs(120),
    )
    .await;
    assert_eq!(
        (f[0]["state"].as_str(), f[0]["error_code"].as_str()),
        (Some("failed"), Some("extraction_memory")),
        "{}",
        f[0]
    );
    assert!(
        f[0]["error"].as_str().unwrap().contains("256 MiB"),
        "{}",
        f[0]
    );

    // Many small pages: slow to read, light on memory. Removing the file kills the reader.
    // Other tests of this binary read documents too: this one watches its own child only.
    let others = extraction_children();
    let (_, added) = upload(
        &app,
        &ann.access,
        &c,
        "slow.pdf",
        operator_flood(19, 600 << 10),
    )
    .await;
    let id = added["id"].as_str().unwrap().to_owned();
    let start = Instant::now();
    let reader = loop {
        if let Some(pid) = extraction_children()
            .into_iter()
            .find(|p| !others.contains(p))
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no extraction child started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The request must not wait behind the extraction's connection (a worker thread on the
    // shared shard once answered 503 here: `shard::shard_of`).
    let (status, body) = send(
        &app,
        Method::DELETE,
        &ann.access,
        &format!("/api/collections/{c}/files/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    let removed = Instant::now();
    while extraction_children().contains(&reader) {
        assert!(
            removed.elapsed() < Duration::from_secs(5),
            "the reader outlived its file"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 1 MiB of one letter through both routes: chunking cuts letter runs before sizing them
/// (it was quadratic: minutes of CPU), so both files end ready, chunked, in bounded time.
#[tokio::test]
async fn run_on_text_settles_in_bounded_time_through_both_routes() {
    let fake = FakeUpstream::start().await;
    // Chunks of the default size in batches of the default count: the fake's 60-token
    // chunks in fours would make this a test of thousands of embedding calls.
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| {
            s.knowledge.chunk_tokens = 300;
            s.knowledge.chunk_overlap_tokens = 40;
            s.knowledge.embed_batch = 64;
        })
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Run-on").await;
    let watch = Watch::start(&app);
    let names = add_both_ways(&app, &ann.access, &c, "runon.txt", vec![b'x'; 1 << 20]).await;
    let files = settle(&app, &ann.access, &c, &names, Duration::from_secs(120)).await;
    watch.finish().await;
    for f in &files {
        assert_eq!(f["state"], "ready", "{f}");
    }
}
