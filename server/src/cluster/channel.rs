//! Cancel anywhere: `POST .../cancel` on any process, or an admin disabling or re-roling a
//! user, stops the turn wherever it runs. The request is a Postgres NOTIFY on one channel;
//! every process LISTENs on a connection of its own and stops the turns it runs. The same
//! channel carries the re-attach protocol: `follow:` and `changed:` ([`crate::turn::Follower`]), and
//! `mcp`: the admin API changed an MCP server ([`crate::tools::mcp::sync`]). What each signal
//! does in this process is the [`Subscriber`]'s business.

use std::time::Duration;

use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::StreamExt;
use uuid::Uuid;

use crate::db::prepared::sql;

/// The channel every process listens on.
const CHANNEL: &str = "agentchat_turns";

/// What a notification asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Cancel one turn.
    Turn(Uuid),
    /// Stop every turn of a user (disabled, or their role changed).
    User(Uuid),
}

impl Stop {
    fn payload(self) -> String {
        match self {
            Self::Turn(id) => format!("turn:{id}"),
            Self::User(id) => format!("user:{id}"),
        }
    }

    fn parse(payload: &str) -> Option<Self> {
        let (kind, id) = payload.split_once(':')?;
        let id = Uuid::parse_str(id).ok()?;
        match kind {
            "turn" => Some(Self::Turn(id)),
            "user" => Some(Self::User(id)),
            _ => None,
        }
    }
}

/// Asks every process (this one included) to stop the turn or the user's turns.
pub async fn broadcast(conn: &mut AsyncPgConnection, stop: Stop) -> diesel::QueryResult<()> {
    signal(conn, Signal::Stop(stop)).await
}

/// Everything said on the channel: stops, and the re-attach protocol ([`crate::turn::Follower`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Stop(Stop),
    /// A process follows this turn: the process running it should announce its changes.
    Follow(Uuid),
    /// This turn committed a step or ended.
    Changed(Uuid),
    /// The admin API added, changed or deleted an MCP server: every process re-reads them.
    McpServersChanged,
    /// A provider's circuit breaker opened or closed: every process re-reads them.
    BreakersChanged,
    /// The admin API changed the model catalogue: every process re-reads it.
    CatalogueChanged,
}

impl Signal {
    fn payload(self) -> String {
        match self {
            Self::Stop(stop) => stop.payload(),
            Self::Follow(id) => format!("follow:{id}"),
            Self::Changed(id) => format!("changed:{id}"),
            Self::McpServersChanged => "mcp".to_owned(),
            Self::BreakersChanged => "breakers".to_owned(),
            Self::CatalogueChanged => "catalogue".to_owned(),
        }
    }

    fn parse(payload: &str) -> Option<Self> {
        if let Some(stop) = Stop::parse(payload) {
            return Some(Self::Stop(stop));
        }
        match payload {
            "mcp" => return Some(Self::McpServersChanged),
            "breakers" => return Some(Self::BreakersChanged),
            "catalogue" => return Some(Self::CatalogueChanged),
            _ => {}
        }
        let (kind, id) = payload.split_once(':')?;
        let id = Uuid::parse_str(id).ok()?;
        match kind {
            "follow" => Some(Self::Follow(id)),
            "changed" => Some(Self::Changed(id)),
            _ => None,
        }
    }
}

/// Says `signal` to every process (this one included).
pub async fn signal(conn: &mut AsyncPgConnection, signal: Signal) -> diesel::QueryResult<()> {
    sql("SELECT pg_notify('agentchat_turns', $1)")
        .bind::<Text, _>(signal.payload())
        .execute(conn)
        .await
        .map(drop)
}

/// What acts on the channel's signals in this process ([`crate::turn::Listeners`]).
pub trait Subscriber: Send + Sync + 'static {
    /// Acts on one signal.
    fn on_signal(&self, signal: Signal);
    /// The listener (re)connected after an outage: signals may have been missed.
    fn reconnected(&self);
}

/// Listens for as long as the process runs, reconnecting after an outage (and then
/// re-reading the MCP servers, whose changes it may have missed).
pub fn spawn_listener(database_url: String, to: std::sync::Arc<dyn Subscriber>) {
    tokio::spawn(async move {
        let mut first = true;
        loop {
            if let Err(e) = listen(&database_url, to.as_ref(), !first).await {
                tracing::warn!(error = %e, "the cancel listener lost its connection; reconnecting");
            }
            first = false;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

async fn listen(
    url: &str,
    to: &dyn Subscriber,
    catch_up: bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_owned()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    if catch_up {
        to.reconnected();
    }
    while let Some(payload) = rx.recv().await {
        if let Some(signal) = Signal::parse(&payload) {
            to.on_signal(signal);
        }
    }
    drop(client);
    driver.await.unwrap_or(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let id = Uuid::new_v4();
        for stop in [Stop::Turn(id), Stop::User(id)] {
            assert_eq!(Stop::parse(&stop.payload()), Some(stop));
        }
        assert_eq!(Stop::parse("turn:nope"), None);
        assert_eq!(Stop::parse("other:1"), None);
        for signal in [
            Signal::Stop(Stop::Turn(id)),
            Signal::Follow(id),
            Signal::Changed(id),
            Signal::McpServersChanged,
            Signal::BreakersChanged,
            Signal::CatalogueChanged,
        ] {
            assert_eq!(Signal::parse(&signal.payload()), Some(signal));
        }
    }
}
