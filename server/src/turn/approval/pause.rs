//! Pausing a turn for approval: which calls of a model message wait for a person (the role's
//! policy as it is now), and the pause itself: the step is stored with the waiting calls in
//! one commit, the client is told what waits (`approval_required`), and the turn ends with
//! `awaiting_approval`, holding nothing. [`crate::turn::approval::resume`] runs it on once decided.

use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use crate::db;
use crate::domain::ApprovalState;
use crate::llm;
use crate::tools::approval::{self, Approver};
use crate::tools::mcp::tool::SEPARATOR;
use crate::tools::{ExecutedCall, Outcome, ToolOutput};
use crate::turn::approval::sql::{self as approval_db, Approval, NewApproval, Pause};
use crate::turn::engine::{TurnEngine, Who};
use crate::turn::events::{ApprovalRequiredEvent, FinishReason, TurnEvent};
use crate::turn::plan::Plan;
use crate::turn::step::commit::{mark_incomplete, unavailable, Ending, TurnRecord};

/// A call that waits for a decision.
pub(in crate::turn) struct Waiting {
    approver: Approver,
    /// Parsed and validated: what runs when approved.
    arguments: Value,
    server: Option<String>,
}

/// For each call (in order), the decision it waits for, if any, under the plan's role: the
/// role as the commit before this model call read it (the turn's start or its last step), so
/// the gate asks the database nothing. Calls of unknown or not-allowed tools, and calls whose
/// arguments do not validate, wait for nothing: they fail as they would anyway.
pub(in crate::turn) fn gate(
    engine: &TurnEngine,
    plan: &Plan,
    calls: &[llm::ToolCall],
) -> Vec<Option<Waiting>> {
    let candidate = |c: &llm::ToolCall| {
        plan.tools.get(&c.name).is_some() && crate::tools::policy::allows(&plan.role.tools, &c.name)
    };
    calls
        .iter()
        .map(|c| {
            if !candidate(c) {
                return None;
            }
            let mcp = mcp_tool(engine, &c.name);
            let default = match (&mcp, plan.tools.get(&c.name)) {
                (Some((_, read_only)), _) => approval::DefaultApprover::Mcp {
                    read_only: *read_only,
                },
                (None, Some(tool)) => approval::DefaultApprover::Tool(tool.default_approver()),
                (None, None) => approval::NO_DEFAULT,
            };
            let approver = approval::required(&plan.role.approvals, &c.name, default);
            if approver == Approver::None {
                return None;
            }
            let arguments = plan.tools.check_arguments(&c.name, &c.arguments).ok()?;
            Some(Waiting {
                approver,
                arguments,
                server: mcp.map(|(server, _)| server),
            })
        })
        .collect()
}

/// For an MCP tool: its server and whether the server annotates it read-only.
fn mcp_tool(engine: &TurnEngine, name: &str) -> Option<(String, bool)> {
    if engine.tools.get(name).is_some() {
        return None;
    }
    let (server, rest) = name.split_once(SEPARATOR)?;
    let shared = engine.mcp.server(server)?;
    let read_only = shared
        .tools()
        .iter()
        .find(|t| t.name == name && !rest.is_empty())
        .is_some_and(|t| approval::annotated_read_only(&t.annotations));
    Some((server.to_owned(), read_only))
}

/// Stores the step and the waiting calls in one commit, then tells the client what waits.
/// The turn ends here (`awaiting_approval`); its claim is released as it ends.
pub(in crate::turn) async fn pause(
    engine: &TurnEngine,
    turn: &Who,
    calls: &[llm::ToolCall],
    waits: Vec<Option<Waiting>>,
    events: &crate::turn::turn_log::EventSink,
    record: &mut TurnRecord,
) -> Ending {
    let Some(message_id) = record.last_assistant else {
        return unavailable();
    };
    let ttl = chrono::Duration::from_std(engine.durable.approval_ttl)
        .unwrap_or(chrono::Duration::days(1));
    let expires_at = chrono::Utc::now() + ttl;
    let rows: Vec<NewApproval> = calls
        .iter()
        .zip(waits)
        .filter_map(|(c, w)| w.map(|w| (c, w)))
        .map(|(c, w)| NewApproval {
            id: Uuid::new_v4(),
            conversation_id: turn.conversation_id,
            user_id: turn.user_id,
            username: turn.username.clone(),
            turn_id: turn.turn_id,
            message_id,
            tool_call_id: c.id.clone(),
            tool: c.name.clone(),
            server: w.server,
            // Postgres cannot store NUL; what is stored (and shown) is what runs.
            arguments: db::pg_safe_json(&w.arguments),
            approver: w.approver,
            expires_at,
        })
        .collect();
    let pause = Pause {
        messages: record.messages.clone(),
        usage: record.usage.clone(),
        audit: record.audit.clone(),
        settle: record.pending.clone(),
        approvals: rows.clone(),
    };
    let stored = async {
        let mut conn = db::conn(&engine.pool)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        approval_db::store_pause(&mut conn, pause)
            .await
            .map_err(anyhow::Error::from)
    }
    .await;
    if let Err(e) = stored {
        tracing::error!(error = %e, "storing a paused step failed");
        // The calls that wait will never get results: the step is stored incomplete.
        mark_incomplete(&mut record.messages, "unavailable");
        return unavailable();
    }
    record.messages.clear();
    record.usage.clear();
    record.audit.clear();
    record.pending = None;
    if let Ok(mut o) = turn.outstanding.lock() {
        *o = None;
    }
    for r in rows {
        engine
            .metrics
            .approvals_requested
            .with_label_values(&[r.approver.as_str()])
            .inc();
        let _ = events
            .send(TurnEvent::ApprovalRequired(Box::new(
                ApprovalRequiredEvent {
                    approval_id: r.id,
                    tool_call_id: r.tool_call_id,
                    name: r.tool,
                    arguments: r.arguments,
                    approver: r.approver,
                    server: r.server,
                    expires_at: r.expires_at,
                },
            )))
            .await;
    }
    Ending::Finished(FinishReason::AwaitingApproval)
}

/// The tool error the model gets for a call that was denied or expired.
pub(in crate::turn) fn not_decided(a: &Approval) -> ExecutedCall {
    let (code, message) = if a.state == ApprovalState::Expired {
        (
            "approval_expired",
            format!(
                "approval_expired: nobody approved this call of `{}` in time, so it did not run",
                a.tool
            ),
        )
    } else {
        let who = a.decided_by_name.as_deref().unwrap_or("someone");
        let why = a
            .note
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .map(|n| format!(": {}", db::pg_safe_text(n)))
            .unwrap_or_else(|| " (no reason given)".to_owned());
        (
            "approval_denied",
            format!(
                "approval_denied: {who} denied this call of `{}`{why}; it did not run",
                a.tool
            ),
        )
    };
    ExecutedCall {
        output: ToolOutput::err(message),
        outcome: Outcome::Refused,
        error_code: Some(code),
        duration: Duration::ZERO,
        result_bytes: 0,
        truncated: false,
    }
}
