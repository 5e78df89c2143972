//! Approval by policy, the turn's side: `pause` stores a step whose calls wait for a person
//! and ends the turn holding nothing; `decide` takes a person's decision (and the sweeper's
//! expiries and take-overs); `resume` runs the decided step on, on whichever process took
//! the last decision. `sql` and `sql_step` are their rows.

pub(super) mod decide;
pub(super) mod pause;
pub(super) mod resume;
pub(super) mod sql;
pub(super) mod sql_step;
