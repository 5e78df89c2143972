//! Deciding paused tool calls: a person's decision through the API, and the sweeper that
//! expires calls nobody decided in time, takes over decided steps nobody ran on, and keeps
//! the approval gauges current. Whichever process records a step's last decision runs the
//! turn on ([`crate::turn::approval::resume`]).

use std::time::Duration;

use uuid::Uuid;

use crate::db;
use crate::domain::{ApprovalState, Approver};
use crate::turn::approval::sql::{self as approval_db, Approval, Decider, ListFilter, Refusal};
use crate::turn::approval::sql_step::{self as approval_step, Decided};
use crate::turn::engine::TurnEngine;
use crate::turn::error::TurnError;
use crate::turn::follow::Follower;

pub use crate::domain::Decision;

/// What a decision did: the approval as recorded and, when this decision let the turn go on
/// and the caller follows it, the turn's event log.
pub struct DecisionOutcome {
    pub approval: Approval,
    /// The turn went on (here), whether or not its events are followed.
    pub resumed: bool,
    /// The resumed turn, followed from where it went on (as its owner's turn: an admin may
    /// be the one deciding).
    pub follower: Option<Follower>,
}

impl TurnEngine {
    /// Starts this process's background work on turns: the approval sweeper (expiries,
    /// decided steps nobody ran on).
    pub fn spawn_sweepers(&self) {
        spawn_sweeper(self.clone());
    }

    /// A page of approvals, newest first, as `filter` narrows them (its owner and state).
    pub async fn approvals(&self, filter: &ListFilter) -> Result<Vec<Approval>, TurnError> {
        let mut conn = db::conn(&self.pool).await?;
        Ok(approval_db::list(&mut conn, filter).await?)
    }

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
    ) -> Result<DecisionOutcome, TurnError> {
        let mut conn = db::conn(&self.pool).await?;
        let claimant = self.claimant();
        let decided =
            approval_step::decide(&mut conn, id, who, decision.state(), note, &claimant).await?;
        drop(conn);
        match decided {
            Decided::NotFound | Decided::Refused(Refusal::Hidden) => {
                Err(TurnError::NotFound("approval"))
            }
            Decided::Refused(Refusal::AdminOnly) => Err(TurnError::AdminApproval),
            Decided::Refused(Refusal::OwnerOnly) => Err(TurnError::NotYourApproval),
            Decided::Earlier(a) => Err(TurnError::AlreadyDecided { state: a.state }),
            Decided::Recorded { approval, resume } => {
                self.metrics
                    .approval_decisions
                    .with_label_values(&[approval.state.as_str()])
                    .inc();
                tracing::info!(approval = %approval.id, tool = %approval.tool,
                    decision = %approval.state, decided_by = %who.username, "approval decided");
                let expired = approval.state == ApprovalState::Expired;
                let resumed = resume.is_some();
                let follower = match resume {
                    Some(r) if follow && !expired => {
                        let (user_id, conversation_id) = (r.user_id, r.conversation_id);
                        let log = crate::turn::supervise::spawn_resumed(self, r);
                        Some(self.follow_resumed(user_id, conversation_id, log))
                    }
                    Some(r) => {
                        // Nobody follows it here; it runs to its end all the same.
                        drop(crate::turn::supervise::spawn_resumed(self, r));
                        None
                    }
                    None => None,
                };
                if expired {
                    return Err(TurnError::ApprovalExpired);
                }
                Ok(DecisionOutcome {
                    approval: *approval,
                    resumed,
                    follower,
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
                for approver in [Approver::User, Approver::Admin] {
                    let row = rows.iter().find(|r| r.approver == approver.as_str());
                    let approver = approver.as_str();
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
        let steps = match approval_step::steps_to_settle(&mut conn).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "looking for expired approvals failed");
                return;
            }
        };
        let claimant = self.claimant();
        for step in steps {
            match approval_step::expire_step(&mut conn, step, &claimant).await {
                Ok(Some(resume)) => {
                    let expired = resume
                        .calls
                        .iter()
                        .filter(|a| a.state == ApprovalState::Expired);
                    self.metrics
                        .approval_decisions
                        .with_label_values(&[ApprovalState::Expired.as_str()])
                        .inc_by(u64::try_from(expired.count()).unwrap_or(0));
                    drop(crate::turn::supervise::spawn_resumed(self, resume));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "settling a paused step failed"),
            }
        }
    }
}

/// Runs the approval sweeper of this process: often enough that an expiry is noticed within
/// a quarter of the TTL, at most every 5 s.
fn spawn_sweeper(engine: TurnEngine) {
    let every =
        (engine.durable.approval_ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(5));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            engine.sweep_approvals().await;
        }
    });
}
