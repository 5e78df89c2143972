-- Every tool call: executed, failed, refused or timed out.
CREATE TABLE audit_log (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    user_id         UUID REFERENCES users (id) ON DELETE SET NULL,
    username        TEXT NOT NULL,
    conversation_id UUID,
    tool            TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    -- The model's arguments, capped in size (see `arguments_truncated`).
    arguments       JSONB NOT NULL,
    arguments_truncated BOOLEAN NOT NULL DEFAULT false,
    outcome         TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'refused', 'timeout')),
    error           TEXT,
    duration_ms     BIGINT NOT NULL,
    result_bytes    BIGINT NOT NULL,
    trace_id        TEXT,
    span_id         TEXT
);
CREATE INDEX audit_log_recent ON audit_log (created_at DESC, id DESC);
CREATE INDEX audit_log_user ON audit_log (user_id, created_at DESC);
CREATE INDEX audit_log_tool ON audit_log (tool, created_at DESC);

-- Tools admins define without writing Rust: an HTTP endpoint with a parameter schema.
CREATE TABLE custom_tools (
    name         TEXT PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_-]{1,64}$'),
    description  TEXT NOT NULL,
    parameters   JSONB NOT NULL,
    method       TEXT NOT NULL CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
    url_template TEXT NOT NULL,
    -- Header values are secrets: never returned by the API.
    headers      JSONB NOT NULL DEFAULT '{}',
    timeout_ms   BIGINT NOT NULL DEFAULT 10000 CHECK (timeout_ms BETWEEN 100 AND 120000),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Default allowlists for the built-in tool set: members get the workspace and analysis
-- tools; fetching URLs is for admins until an admin decides otherwise.
UPDATE roles SET tools = ARRAY['calculator', 'csv_stats', 'current_time', 'delete_file',
                               'http_get', 'list_files', 'read_file', 'write_file']
 WHERE name = 'admin';
UPDATE roles SET tools = ARRAY['calculator', 'csv_stats', 'current_time', 'delete_file',
                               'list_files', 'read_file', 'write_file']
 WHERE name = 'member';
