//! Deciding paused tool calls: a person's decision through the API, and the sweeper that
//! expires calls nobody decided in time, takes over decided steps nobody ran on, and keeps
//! the approval gauges current. Whichever process records a step's last decision runs the
//! turn on ([`super::resume`]).

use std::time::Duration;

use uuid::Uuid;

use super::turn::Agent;
use super::turn_log::EventSink;
use crate::db;
use crate::db::models::approval::{self as approval_db, Approval, Decided, Decider, Refusal};
use crate::error::ApiError;

/// A person's decision on a paused call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

impl Decision {
    fn state(self) -> &'static str {
        match self {
            Self::Approve => "approved",
            Self::Deny => "denied",
        }
    }
}

/// What a decision did: the approval as recorded and, when this decision let the turn go on
/// and the caller follows it, the turn's event log.
pub struct DecisionOutcome {
    pub approval: Approval,
    /// The turn went on (here), whether or not its events are followed.
    pub resumed: bool,
    pub events: Option<EventSink>,
}

impl Agent {
    /// Records `decision` on approval `id` by `who`. 404: not theirs (or no such approval);
    /// 403: not theirs to decide; 409: decided before, or expired. `follow`: return the
    /// resumed turn's events rather than letting it run unattended.
    pub async fn decide(
        &self,
        id: Uuid,
        who: &Decider,
        decision: Decision,
        note: Option<String>,
        follow: bool,
    ) -> Result<DecisionOutcome, ApiError> {
        let mut conn = db::conn(&self.pool).await?;
        let claimant = self.claimant();
        let decided =
            approval_db::decide(&mut conn, id, who, decision.state(), note, &claimant).await?;
        drop(conn);
        match decided {
            Decided::NotFound | Decided::Refused(Refusal::Hidden) => {
                Err(ApiError::not_found("approval"))
            }
            Decided::Refused(Refusal::AdminOnly) => Err(ApiError::new(
                actix_web::http::StatusCode::FORBIDDEN,
                "admin_approval",
                "an admin must decide this call",
            )),
            Decided::Refused(Refusal::OwnerOnly) => Err(ApiError::new(
                actix_web::http::StatusCode::FORBIDDEN,
                "not_your_approval",
                "only the person chatting decides this call",
            )),
            Decided::AlreadyDecided(a) => Err(ApiError::conflict(
                "already_decided",
                format!("this call was already {}", a.state),
            )),
            Decided::Recorded { approval, resume } => {
                self.metrics
                    .approval_decisions
                    .with_label_values(&[&approval.state])
                    .inc();
                tracing::info!(approval = %approval.id, tool = %approval.tool,
                    decision = %approval.state, decided_by = %who.username, "approval decided");
                let expired = approval.state == "expired";
                let resumed = resume.is_some();
                let events = match resume {
                    Some(r) if follow && !expired => Some(self.start_resumed(r)),
                    Some(r) => {
                        // Nobody follows it here; it runs to its end all the same.
                        drop(self.start_resumed(r));
                        None
                    }
                    None => None,
                };
                if expired {
                    return Err(ApiError::conflict(
                        "approval_expired",
                        "this call waited too long and expired; it did not run",
                    ));
                }
                Ok(DecisionOutcome {
                    approval: *approval,
                    resumed,
                    events,
                })
            }
        }
    }

    /// One pass of the sweeper: the gauges, then overdue and orphaned steps.
    async fn sweep_approvals(&self) {
        let Ok(mut conn) = db::conn(&self.pool).await else {
            return;
        };
        match approval_db::waiting(&mut conn).await {
            Ok(rows) => {
                for approver in ["user", "admin"] {
                    let row = rows.iter().find(|r| r.approver == approver);
                    self.metrics
                        .approvals_waiting
                        .with_label_values(&[approver])
                        .set(row.map_or(0, |r| r.count));
                    self.metrics
                        .approval_oldest_seconds
                        .with_label_values(&[approver])
                        .set(row.map_or(0.0, |r| r.oldest_secs));
                }
            }
            Err(e) => tracing::warn!(error = %e, "counting waiting approvals failed"),
        }
        let steps = match approval_db::steps_to_settle(&mut conn).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "looking for expired approvals failed");
                return;
            }
        };
        let claimant = self.claimant();
        for step in steps {
            match approval_db::expire_step(&mut conn, step, &claimant).await {
                Ok(Some(resume)) => {
                    let expired = resume.calls.iter().filter(|a| a.state == "expired");
                    self.metrics
                        .approval_decisions
                        .with_label_values(&["expired"])
                        .inc_by(u64::try_from(expired.count()).unwrap_or(0));
                    drop(self.start_resumed(resume));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "settling a paused step failed"),
            }
        }
    }
}

/// Runs the approval sweeper of this process: often enough that an expiry is noticed within
/// a quarter of the TTL, at most every 5 s.
pub fn spawn_sweeper(agent: Agent) {
    let every =
        (agent.durable.approval_ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(5));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            agent.sweep_approvals().await;
        }
    });
}
