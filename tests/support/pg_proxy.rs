//! A Postgres wire-protocol relay that counts the transactions a server makes: every
//! `ReadyForQuery` whose status is idle ends one (an explicit COMMIT or ROLLBACK, or an
//! autocommit statement), as `pg_stat_database.xact_commit` + `xact_rollback` would count
//! them, but at once and only for the connections that go through it. It also remembers the
//! SQL each transaction ran, so a failing count can say what the extra transactions were.
//!
//! Besides transactions it counts statements (each `Execute` of the extended protocol, each
//! simple `Query`) and round trips (each time the server sends again after the client had
//! the last word: statements pipelined in one write, answered together, are one round trip).
//!
//! Plain TCP only: the server must connect with `sslmode=disable`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One ended transaction: the statements it ran, in order (SQL text, shortened).
pub type Transaction = Vec<String>;

#[derive(Default)]
struct Shared {
    ended: Vec<Transaction>,
    statements: u64,
    round_trips: u64,
}

/// Running totals over every connection through the relay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Transactions ended (commits, rollbacks, autocommit statements).
    pub transactions: u64,
    /// Statements executed.
    pub statements: u64,
    /// Client requests answered: a pipelined batch is one.
    pub round_trips: u64,
}

impl std::ops::Sub for Counts {
    type Output = Counts;
    fn sub(self, earlier: Counts) -> Counts {
        Counts {
            transactions: self.transactions - earlier.transactions,
            statements: self.statements - earlier.statements,
            round_trips: self.round_trips - earlier.round_trips,
        }
    }
}

/// The relay; stops accepting when dropped (open connections live on with their peers).
pub struct PgProxy {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Per connection: prepared statements by name and what the open transaction ran so far.
#[derive(Default)]
struct Conn {
    statements: HashMap<String, String>,
    current: Vec<String>,
    /// The first `ReadyForQuery` answers the log-in, not a transaction.
    ready_once: bool,
    /// The client has sent since the server last spoke: the next server bytes end a round trip.
    awaiting_answer: bool,
}

impl PgProxy {
    /// Relays to `upstream` (host:port of Postgres).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let for_accept = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                tokio::spawn(relay(client, server, for_accept.clone()));
            }
        });
        Self {
            addr,
            shared,
            accept,
        }
    }

    /// `url` (a Postgres URL) pointed at this relay, without TLS.
    pub fn url_for(&self, url: &str) -> String {
        let mut u = url::Url::parse(url).unwrap();
        u.set_host(Some("127.0.0.1")).unwrap();
        u.set_port(Some(self.addr.port())).unwrap();
        u.query_pairs_mut().append_pair("sslmode", "disable");
        u.to_string()
    }

    /// How many transactions have ended so far.
    pub fn count(&self) -> usize {
        self.shared.lock().unwrap().ended.len()
    }

    /// The totals so far (subtract two to count what happened between).
    pub fn counts(&self) -> Counts {
        let shared = self.shared.lock().unwrap();
        Counts {
            transactions: shared.ended.len() as u64,
            statements: shared.statements,
            round_trips: shared.round_trips,
        }
    }

    /// The transactions ended after the first `from`.
    pub fn since(&self, from: usize) -> Vec<Transaction> {
        self.shared.lock().unwrap().ended[from..].to_vec()
    }
}

async fn relay(client: TcpStream, server: TcpStream, shared: Arc<Mutex<Shared>>) {
    let conn = Arc::new(Mutex::new(Conn::default()));
    let (mut client_r, mut client_w) = client.into_split();
    let (mut server_r, mut server_w) = server.into_split();
    let front_conn = conn.clone();
    let for_front = shared.clone();
    let front = async move {
        let mut parser = Parser::new(true);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = client_r.read(&mut buf).await.unwrap_or(0);
            if n > 0 {
                // Noted before the server has it, so its answer finds the round trip open.
                let mut c = front_conn.lock().unwrap();
                for (tag, body) in parser.feed(&buf[..n]) {
                    if matches!(tag, b'E' | b'Q') {
                        for_front.lock().unwrap().statements += 1;
                    }
                    if matches!(tag, b'S' | b'Q' | b'H') {
                        c.awaiting_answer = true;
                    }
                    frontend_message(&mut c, tag, &body);
                }
            }
            if n == 0 || server_w.write_all(&buf[..n]).await.is_err() {
                let _ = server_w.shutdown().await;
                return;
            }
        }
    };
    let back = async move {
        let mut parser = Parser::new(false);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = server_r.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                let _ = client_w.shutdown().await;
                return;
            }
            // Counted before the client hears it: whoever waits for an answer sees the count.
            {
                let mut c = conn.lock().unwrap();
                if std::mem::take(&mut c.awaiting_answer) {
                    shared.lock().unwrap().round_trips += 1;
                }
            }
            for (tag, body) in parser.feed(&buf[..n]) {
                if tag == b'Z' && body.first() == Some(&b'I') {
                    let mut c = conn.lock().unwrap();
                    let statements = std::mem::take(&mut c.current);
                    if std::mem::replace(&mut c.ready_once, true) {
                        shared.lock().unwrap().ended.push(statements);
                    }
                }
            }
            if client_w.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::join!(front, back);
}

/// Notes the SQL a frontend message runs.
fn frontend_message(c: &mut Conn, tag: u8, body: &[u8]) {
    let mut fields = body.split(|b| *b == 0);
    match tag {
        b'Q' => {
            let sql = text(fields.next());
            c.current.push(short(&sql));
        }
        b'P' => {
            let name = text(fields.next());
            let sql = text(fields.next());
            c.statements.insert(name, short(&sql));
        }
        b'B' => {
            let _portal = fields.next();
            let name = text(fields.next());
            let sql = c.statements.get(&name).cloned().unwrap_or(name);
            c.current.push(sql);
        }
        _ => {}
    }
}

fn text(field: Option<&[u8]>) -> String {
    String::from_utf8_lossy(field.unwrap_or_default()).into_owned()
}

fn short(sql: &str) -> String {
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(90).collect()
}

/// Splits a byte stream into protocol messages: a tag byte and a length that counts itself.
/// The frontend's first message (start-up) has no tag.
struct Parser {
    pending: Vec<u8>,
    startup: bool,
}

impl Parser {
    fn new(frontend: bool) -> Self {
        Self {
            pending: Vec::new(),
            startup: frontend,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let head = usize::from(!self.startup);
            if self.pending.len() < head + 4 {
                return out;
            }
            let len_bytes: [u8; 4] = self.pending[head..head + 4].try_into().unwrap();
            let len = u32::from_be_bytes(len_bytes) as usize;
            if self.pending.len() < head + len {
                return out;
            }
            let tag = if self.startup { 0 } else { self.pending[0] };
            out.push((tag, self.pending[head + 4..head + len].to_vec()));
            self.pending.drain(..head + len);
            self.startup = false;
        }
    }
}
