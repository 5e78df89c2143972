//! Tiny local HTTP servers for tool tests: a canary that counts every connection, a
//! redirector, a slow endpoint and a page server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a tiny server answers.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// 200 with this content type and body.
    Body(&'static str, String),
    /// 302 to this URL.
    Redirect(String),
    /// Wait this long, then 200 "late".
    Slow(Duration),
}

/// A running tiny server.
pub struct TinyServer {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl TinyServer {
    pub async fn start(behaviour: Behaviour) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (h, r) = (hits.clone(), requests.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                h.fetch_add(1, Ordering::SeqCst);
                let behaviour = behaviour.clone();
                let r = r.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let mut got = 0;
                    while got < buf.len() {
                        match sock.read(&mut buf[got..]).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got += n,
                        }
                        if buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                            break;
                        }
                    }
                    r.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&buf[..got]).into_owned());
                    let response = match behaviour {
                        Behaviour::Body(ct, body) => format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        Behaviour::Redirect(to) => format!(
                            "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        ),
                        Behaviour::Slow(d) => {
                            tokio::time::sleep(d).await;
                            "HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nlate".to_owned()
                        }
                    };
                    let _ = sock.write_all(response.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Self {
            addr,
            hits,
            requests,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// Raw request heads received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}
