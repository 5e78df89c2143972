-- `Idempotency-Key` on sending a message: a retried request attaches to the turn the first
-- one started (for 24 hours) instead of running it again.
CREATE TABLE idempotency_keys (
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key             TEXT NOT NULL,
    request_hash    BYTEA NOT NULL,
    conversation_id UUID NOT NULL,
    turn_id         UUID NOT NULL,
    user_message_id UUID NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
