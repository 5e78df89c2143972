-- Indexes on the hold tables that no statement reads any more (issue 43). Every turn inserts
-- a hold, so each index is an entry written and a relation opened on every turn's start.
--
-- * `*_turn`: the sweeper once looked a turn's holds up by `turn_id`; since a hold names its
--   conversation (2026-12-07-000010), it reads that row by its key instead.
-- * `*_expiry`: the sweeper deletes what is expired OR whose turn ended, in one scan; the
--   second arm cannot use an index, so the plan is a scan of the table (in-flight holds
--   only) and this index is never read.
--
-- Kept: the primary keys (a turn settles its hold by id) and `budget_holds_process` (the
-- reaper frees a dead process's holds by it).
DROP INDEX budget_holds_turn_idx;
DROP INDEX budget_holds_expiry;
DROP INDEX money_holds_turn;
DROP INDEX money_holds_expiry;
