-- Assistants: named presets (instructions, model, tools, collections, parameters) an admin
-- keeps; every save is a new version, and conversations use the current one.
CREATE TABLE assistants (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    version     INT NOT NULL DEFAULT 1,
    created_by  UUID REFERENCES users(id) ON DELETE SET NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Retired: no new chats, and chats with it take no new messages.
    retired_at  TIMESTAMPTZ
);
-- A live name is unique (it is also the `/v1` model name `assistant:<name>`).
CREATE UNIQUE INDEX assistants_live_name ON assistants (lower(name)) WHERE retired_at IS NULL;

CREATE TABLE assistant_versions (
    assistant_id     UUID NOT NULL REFERENCES assistants(id) ON DELETE CASCADE,
    version          INT NOT NULL,
    name             TEXT NOT NULL,
    description      TEXT NOT NULL DEFAULT '',
    instructions     TEXT NOT NULL,
    -- NULL: the server's default model (and its fallbacks).
    model            TEXT,
    -- Allowlist entries, as a role's; what a chat may use is this ∩ the user's role.
    tools            TEXT[] NOT NULL DEFAULT '{}',
    collections      UUID[] NOT NULL DEFAULT '{}',
    -- {temperature?, max_output_tokens?}
    params           JSONB NOT NULL DEFAULT '{}',
    -- Empty: every role.
    visible_to_roles TEXT[] NOT NULL DEFAULT '{}',
    created_by       UUID REFERENCES users(id) ON DELETE SET NULL,
    created_by_name  TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (assistant_id, version)
);

ALTER TABLE conversations
    ADD COLUMN assistant_id UUID REFERENCES assistants(id) ON DELETE SET NULL,
    ADD COLUMN memory_enabled BOOLEAN NOT NULL DEFAULT true;
CREATE INDEX conversations_assistant ON conversations (assistant_id) WHERE assistant_id IS NOT NULL;

-- Memory: short notes a user keeps for every chat (pinned into the prompt under the
-- system prompt, as the user's words).
CREATE TABLE memory_notes (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    -- `user` (written in the account page) or `model` (the `remember` tool).
    source     TEXT NOT NULL DEFAULT 'user' CHECK (source IN ('user', 'model')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX memory_notes_user ON memory_notes (user_id, created_at);

ALTER TABLE users ADD COLUMN memory_enabled BOOLEAN NOT NULL DEFAULT true;

-- The built-in roles may let the model remember (an admin takes it away like any tool).
UPDATE roles SET tools = array_append(tools, 'remember')
 WHERE name IN ('admin', 'member') AND NOT ('remember' = ANY(tools));
