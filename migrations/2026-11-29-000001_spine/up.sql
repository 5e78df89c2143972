-- Server-wide secrets generated on first start (e.g. the JWT signing key), shared by all replicas.
CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    value      BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Roles decide which tools a user may call and their default token budget.
CREATE TABLE roles (
    name          TEXT PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    tools         TEXT[] NOT NULL DEFAULT '{}',
    token_budget  BIGINT CHECK (token_budget IS NULL OR token_budget >= 0),
    budget_period TEXT NOT NULL DEFAULT 'month' CHECK (budget_period IN ('day', 'week', 'month', 'total')),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

INSERT INTO roles (name, tools) VALUES
    ('admin', ARRAY['current_time', 'calculator']),
    ('member', ARRAY['current_time', 'calculator']);

CREATE TABLE users (
    id            UUID PRIMARY KEY,
    username      TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL REFERENCES roles (name) ON UPDATE CASCADE,
    disabled      BOOLEAN NOT NULL DEFAULT false,
    -- Bumped whenever existing access tokens must stop working (disable, role change).
    token_version INTEGER NOT NULL DEFAULT 0,
    -- Per-user override of the role's budget; NULL = use the role's.
    token_budget  BIGINT CHECK (token_budget IS NULL OR token_budget >= 0),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_lower ON users (lower(username));

CREATE TABLE refresh_tokens (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- All tokens rotated from one login share a family; reuse of a spent token revokes the family.
    family_id  UUID NOT NULL,
    token_hash BYTEA NOT NULL UNIQUE,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id);

CREATE TABLE conversations (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title      TEXT NOT NULL,
    model      TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX conversations_user_recent ON conversations (user_id, updated_at DESC, id DESC);

CREATE TABLE messages (
    id              UUID PRIMARY KEY,
    -- Insertion order within a conversation (timestamps can tie).
    seq             BIGINT GENERATED ALWAYS AS IDENTITY,
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content         TEXT NOT NULL,
    tool_calls      JSONB,
    tool_call_id    TEXT,
    status          TEXT NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'incomplete')),
    status_reason   TEXT,
    model           TEXT,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    duration_ms     BIGINT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX messages_conversation_seq ON messages (conversation_id, seq);
