-- Personal API keys for the OpenAI-compatible API. Only the SHA-256 of the secret is kept
-- (the secret is 256 random bits: a fast hash is enough, a slow one would cost every call).
CREATE TABLE api_keys (
    id UUID PRIMARY KEY,
    user_id UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    -- The first characters of the key, shown in lists so a user can tell keys apart.
    prefix TEXT NOT NULL,
    secret_hash BYTEA NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id, created_at);
