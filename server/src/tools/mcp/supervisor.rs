//! One supervisor task per MCP server: connects, reads the tool list, re-reads it on
//! `notifications/tools/list_changed` and on an admin's refresh, notices a dead session and
//! reconnects with exponential backoff.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::connection::{self, Session};
use super::listing::list_bounded;
use super::manager::McpManager;
use super::server_state::{Connected, ServerShared, State};

/// First reconnect delay; doubles per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a session is looked at for having closed (a crashed stdio process).
const CLOSED_POLL: Duration = Duration::from_millis(200);
/// Least time given to start a session: a stdio server may be a program that takes seconds
/// to start (a Python interpreter on a busy host), even when its calls must be quick.
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Connect, list, watch, reconnect: until `stop`.
pub(super) async fn supervise(
    manager: McpManager,
    shared: Arc<ServerShared>,
    stop: CancellationToken,
) {
    let name = shared.config.name.clone();
    let mut failures: u32 = 0;
    loop {
        let connect_within = shared.config.timeout().max(MIN_CONNECT_TIMEOUT);
        let attempt = tokio::time::timeout(
            connect_within,
            connection::connect(
                &shared.config,
                manager.limits(),
                Arc::clone(&shared.tools_changed),
                stop.child_token(),
            ),
        );
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = attempt => r,
        };
        let error = match outcome {
            Ok(Ok(session)) => {
                let error = watch_session(&manager, &shared, session, &stop).await;
                match error {
                    None => return, // stopped
                    Some(e) => {
                        failures = 0;
                        e
                    }
                }
            }
            Ok(Err(e)) => e,
            Err(_) => format!(
                "no answer within {} ms while connecting",
                shared.config.timeout_ms
            ),
        };
        if stop.is_cancelled() {
            return;
        }
        failures = failures.saturating_add(1);
        tracing::warn!(mcp_server = %name, error = %error, failures, "MCP server unavailable");
        shared.set(State::Error, Some(error), None);
        manager.publish();
        let delay = FIRST_BACKOFF
            .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(10)))
            .min(MAX_BACKOFF);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
            _ = shared.poke.notified() => {}
        }
    }
}

/// Lists tools, then re-lists on notifications and pokes until the session breaks (the
/// error) or `stop` (`None`).
async fn watch_session(
    manager: &McpManager,
    shared: &Arc<ServerShared>,
    mut session: Session,
    stop: &CancellationToken,
) -> Option<String> {
    let mut poll = tokio::time::interval(CLOSED_POLL);
    let mut relist = true;
    let listener = subscribe_to_tool_changes(
        &session,
        Arc::clone(&shared.tools_changed),
        shared.config.timeout(),
    )
    .await;
    let _stop_listener = listener.map(AbortOnDrop);
    loop {
        if relist {
            relist = false;
            let listed = tokio::time::timeout(
                shared.config.timeout(),
                list_bounded(session.peer(), &shared.config.name, manager.limits()),
            )
            .await;
            match listed {
                Ok(Ok(listing)) => {
                    tracing::info!(mcp_server = %shared.config.name, tools = listing.tools.len(),
                        left_out = ?listing.notes, "MCP server connected");
                    shared.set(
                        State::Connected,
                        None,
                        Some(Connected {
                            peer: session.peer().clone(),
                            tools: listing.tools,
                            notes: listing.notes,
                        }),
                    );
                    manager.publish();
                }
                Ok(Err(e)) => {
                    let _ = session.close().await;
                    return Some(format!("listing tools failed: {e}"));
                }
                Err(_) => {
                    let _ = session.close().await;
                    return Some(format!(
                        "listing tools took longer than {} ms",
                        shared.config.timeout_ms
                    ));
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => {
                let _ = session.close().await;
                return None;
            }
            _ = shared.tools_changed.notified() => relist = true,
            _ = shared.poke.notified() => relist = true,
            _ = poll.tick() => {
                if session.is_closed() || session.peer().is_transport_closed() {
                    return Some("the connection to the MCP server closed".to_owned());
                }
            }
        }
    }
}

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Stateless (2026-07-28) sessions deliver `tools/list_changed` only to a
/// `subscriptions/listen` stream: open one and forward what it says. Legacy sessions send the
/// notification unasked (it reaches [`connection::Handler`]).
async fn subscribe_to_tool_changes(
    session: &Session,
    tools_changed: Arc<Notify>,
    timeout: Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    let peer = session.peer();
    let modern = peer
        .peer_info()
        .is_some_and(|i| !i.protocol_version.has_initialize());
    if !modern {
        return None;
    }
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .build();
    match tokio::time::timeout(timeout, peer.listen(filter)).await {
        Err(_) => None,
        Ok(Ok(mut subscription)) => Some(tokio::spawn(async move {
            while let Ok(Some(_)) = subscription.next().await {
                tools_changed.notify_one();
            }
        })),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the MCP server refused a tool-change subscription");
            None
        }
    }
}
