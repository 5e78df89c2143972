//! Several server processes, one service: the Postgres LISTEN/NOTIFY channel every process
//! listens on ([`channel`]), the turns running in this process and how to stop them
//! ([`active`], [`control`]), followers here of turns running elsewhere ([`remote`]), and
//! each process's heartbeat ([`liveness`]). It knows nothing of what a turn does.

pub mod active;
pub mod channel;
pub mod control;
pub mod heartbeat;
pub mod liveness;
pub mod remote;

pub use active::ActiveTurns;
pub use control::{StopReason, TurnControl};
