-- Liveness is per server process, not per turn: each process keeps one heartbeat row, and
-- its turns' claims and budget holds name it. When a heartbeat goes stale, any process ends
-- that process's turns (stored `incomplete`, reason `interrupted`) and frees its holds.
CREATE TABLE server_processes (
    id           UUID PRIMARY KEY,
    started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

ALTER TABLE conversations ADD COLUMN active_process_id UUID;
CREATE INDEX conversations_active_process ON conversations (active_process_id)
    WHERE active_process_id IS NOT NULL;

ALTER TABLE budget_holds ADD COLUMN process_id UUID;
CREATE INDEX budget_holds_process ON budget_holds (process_id) WHERE process_id IS NOT NULL;
