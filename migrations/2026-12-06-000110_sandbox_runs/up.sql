-- One row per run of the code interpreter (DESIGN §15): the whole code (the tool-call audit
-- row cuts arguments at 4 KiB), its hash, the files in and out with their hashes, how the
-- run ended, what it used and what it cost. Kept beside audit_log, joined by conversation.
CREATE TABLE sandbox_runs (
    id              BIGSERIAL PRIMARY KEY,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    user_id         UUID REFERENCES users (id) ON DELETE SET NULL,
    username        TEXT NOT NULL,
    conversation_id UUID,
    code            TEXT NOT NULL,
    code_sha256     TEXT NOT NULL,
    inputs          JSONB NOT NULL DEFAULT '[]',
    outputs         JSONB NOT NULL DEFAULT '[]',
    skipped         JSONB NOT NULL DEFAULT '[]',
    outcome         TEXT NOT NULL,
    error           TEXT,
    exit_code       INTEGER,
    timed_out       BOOLEAN NOT NULL DEFAULT false,
    limit_hit       TEXT,
    duration_ms     BIGINT NOT NULL DEFAULT 0,
    cpu_ms          BIGINT NOT NULL DEFAULT 0,
    max_rss_bytes   BIGINT NOT NULL DEFAULT 0,
    queue_wait_ms   BIGINT NOT NULL DEFAULT 0,
    isolation       TEXT NOT NULL,
    cost            NUMERIC(20, 9),
    currency        TEXT
);
CREATE INDEX sandbox_runs_user_time ON sandbox_runs (user_id, created_at DESC);
CREATE INDEX sandbox_runs_conversation ON sandbox_runs (conversation_id);
