-- Circuit breakers of the model catalogue's providers, as every process should see them: a
-- process that opens or closes one writes it here and says `breakers` on the turns channel;
-- the others read this table and take it (the calls themselves check memory only).
CREATE TABLE provider_breakers (
    provider   TEXT PRIMARY KEY CHECK (char_length(provider) <= 64),
    open_until TIMESTAMPTZ,
    reason     TEXT CHECK (char_length(reason) <= 400),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- A call a fallback answered: the model asked for and why it did not answer (the row's
-- `model` is the one that did).
ALTER TABLE usage_records
    ADD COLUMN fallback_from TEXT,
    ADD COLUMN fallback_reason TEXT;
