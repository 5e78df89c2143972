-- How each turn ended: its final `done` or `error` event, written with the turn's last
-- commit, so that a client re-attaching to an ended turn gets the same final event from any
-- server process. A turn is named by the user message that started it.
CREATE TABLE turn_ends (
    turn_id         UUID PRIMARY KEY,
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    event           JSONB NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX turn_ends_conversation ON turn_ends (conversation_id);
