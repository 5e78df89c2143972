//! Following a turn from any position, on any process: the stream of a new turn, a client
//! re-attaching after a reload, a retried `Idempotency-Key` request.
//!
//! On the process running the turn the follower reads its in-memory log ([`TurnLog`]) and
//! gets every delta as it comes. Steps the log has dropped (committed) and turns running
//! elsewhere or ended come from Postgres ([`crate::turn::replay`]), one event per stored piece. A
//! follower of a turn on another process asks that process (a NOTIFY on the channel cancel
//! uses) to announce each commit and the end, and waits for those announcements, polling as
//! well in case one is missed. Ids are positions in the turn, so whichever source an event
//! comes from, a follower never gives an event twice and never skips text.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use crate::db;
use crate::turn::engine::TurnEngine;
use crate::turn::error::TurnError;
use crate::turn::events::TurnEvent;
use crate::turn::replay;
use crate::turn::turn_log::{EventId, EventSink, Read};

/// Events taken from memory at a time.
const BATCH: usize = 256;

/// How often a follower of a turn on another process looks at Postgres without being told.
const POLL: Duration = Duration::from_secs(1);

/// One client's view of one turn.
pub struct Follower {
    pool: db::Pool,
    turns: super::engine::RunningTurns,
    user_id: Uuid,
    conversation_id: Uuid,
    turn_id: Uuid,
    /// The last event given (the client's `Last-Event-ID`).
    after: Option<EventId>,
    /// Steps the follower has had whole from Postgres.
    floor: u32,
    /// Follows a resumed turn from where it went on (its earlier steps were streamed before
    /// it paused): they count as had.
    resumed: bool,
    queue: VecDeque<(EventId, TurnEvent)>,
    log: Option<EventSink>,
    remote: Option<crate::cluster::remote::RemoteWatch>,
    done: bool,
    /// No turn outlives this (its deadline and the time to store it).
    deadline: Instant,
}

impl TurnEngine {
    /// Follows the user's turn after `after`; 404 when it is not theirs or does not exist.
    pub async fn follow(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        turn_id: Uuid,
        after: Option<EventId>,
    ) -> Result<Follower, TurnError> {
        let mut conn = db::conn(&self.pool).await?;
        let found =
            crate::turn::sql::end::status(&mut conn, user_id, conversation_id, turn_id).await?;
        if found.is_none() {
            return Err(TurnError::NotFound("turn"));
        }
        Ok(self.follower(user_id, conversation_id, turn_id, after, None))
    }

    /// Follows a turn this process has just started, from its beginning.
    pub(crate) fn follow_started(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        log: EventSink,
    ) -> Follower {
        self.follower(user_id, conversation_id, log.turn_id, None, Some(log))
    }

    /// Follows a turn this process has just resumed after its approvals, from its new
    /// `turn_start`: the steps before it paused are not given again.
    pub(crate) fn follow_resumed(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        log: EventSink,
    ) -> Follower {
        let mut f = self.follow_started(user_id, conversation_id, log);
        f.resumed = true;
        f
    }

    fn follower(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        turn_id: Uuid,
        after: Option<EventId>,
        log: Option<EventSink>,
    ) -> Follower {
        let limit = self.settings.turn_timeout + crate::turn::plan::STORE_GRACE;
        Follower {
            pool: self.pool.clone(),
            turns: self.turns.clone(),
            user_id,
            conversation_id,
            turn_id,
            after,
            floor: 0,
            resumed: false,
            queue: VecDeque::new(),
            log,
            remote: None,
            done: after == Some(EventId::End),
            deadline: Instant::now() + limit,
        }
    }

    /// Tells the processes following `log`'s turn from elsewhere that it committed or ended
    /// (only when one asked: a plain turn costs nothing more).
    pub(super) fn announce(&self, log: &EventSink) {
        if !log.is_followed_remotely() {
            return;
        }
        let (pool, turn_id) = (self.pool.clone(), log.turn_id);
        tokio::spawn(async move {
            if let Ok(mut conn) = pool.get().await {
                let _ = crate::cluster::channel::signal(
                    &mut conn,
                    crate::cluster::channel::Signal::Changed(turn_id),
                )
                .await;
            }
        });
    }
}

impl Follower {
    /// The turn followed.
    pub fn turn_id(&self) -> Uuid {
        self.turn_id
    }

    /// Its conversation.
    pub fn conversation_id(&self) -> Uuid {
        self.conversation_id
    }

    /// The next event with its id; `None` once the turn's final event was given (or the
    /// turn is gone, or outlived any turn's limits).
    pub async fn next(&mut self) -> Option<(EventId, TurnEvent)> {
        loop {
            if let Some((id, e)) = self.queue.pop_front() {
                if self.after.is_some_and(|a| id <= a) {
                    continue;
                }
                self.after = Some(id);
                self.done = id == EventId::End;
                return Some((id, e));
            }
            if self.done || Instant::now() >= self.deadline {
                return None;
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) {
        if self.log.is_none() {
            self.log = self.turns.log_of(self.turn_id);
        }
        if let Some(log) = self.log.clone() {
            let mut changed = log.subscribe();
            loop {
                changed.borrow_and_update();
                if self.resumed {
                    self.floor = self.floor.max(log.resumed_step());
                }
                match log.read_after(self.after, self.floor, BATCH) {
                    Read::Events(v) if !v.is_empty() => {
                        self.queue.extend(v);
                        return;
                    }
                    Read::Events(_) => {
                        tokio::select! {
                            r = changed.changed() => if r.is_err() { break },
                            _ = tokio::time::sleep_until(self.deadline) => return,
                        }
                    }
                    Read::Behind => break,
                }
            }
        }
        self.read_database().await;
    }

    async fn read_database(&mut self) {
        if self.remote.is_none() && self.log.is_none() {
            // Subscribed before reading: an announcement after the read is not missed.
            self.remote = self.turns.remote.watch(self.turn_id);
        }
        let loaded = async {
            let mut conn = db::conn(&self.pool).await.ok()?;
            replay::load(&mut conn, self.user_id, self.conversation_id, self.turn_id)
                .await
                .ok()
        }
        .await;
        let Some(stored) = loaded else {
            // The database is unavailable: try again shortly.
            tokio::time::sleep(POLL).await;
            return;
        };
        let Some(stored) = stored else {
            // Deleted with its conversation.
            self.done = true;
            return;
        };
        let events = stored.events_after(self.after);
        self.floor = self.floor.max(stored.steps());
        if !events.is_empty() {
            self.queue.extend(events);
            return;
        }
        if !stored.running || self.log.is_some() {
            // Ended and given whole; or running here, where memory has the rest.
            self.done = !stored.running;
            return;
        }
        if let Some(log) = self.turns.log_of(self.turn_id) {
            self.log = Some(log);
            return;
        }
        // Running on another process: ask it to announce its commits, then wait.
        if let Ok(mut conn) = db::conn(&self.pool).await {
            let ask = crate::cluster::channel::Signal::Follow(self.turn_id);
            let _ = crate::cluster::channel::signal(&mut conn, ask).await;
        }
        match self.remote.as_mut() {
            Some(w) => {
                w.changed_within(POLL).await;
            }
            None => tokio::time::sleep(POLL).await,
        }
    }
}
