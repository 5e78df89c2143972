-- One row per user and budget period: what was spent and what in-flight model calls hold.
-- Past periods stay as history.
CREATE TABLE budget_periods (
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    period       TEXT NOT NULL CHECK (period IN ('day', 'week', 'month', 'total')),
    period_start TIMESTAMPTZ NOT NULL,
    spent        BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
    reserved     BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, period, period_start)
);

-- Each outstanding reservation, so that one left by a crashed process can be swept.
CREATE TABLE budget_holds (
    id           UUID PRIMARY KEY,
    user_id      UUID NOT NULL,
    period       TEXT NOT NULL,
    period_start TIMESTAMPTZ NOT NULL,
    amount       BIGINT NOT NULL CHECK (amount >= 0),
    expires_at   TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (user_id, period, period_start)
        REFERENCES budget_periods (user_id, period, period_start) ON DELETE CASCADE
);
CREATE INDEX budget_holds_expiry ON budget_holds (expires_at);

-- One row per model call: the usage ledger behind /api/admin/usage.
CREATE TABLE usage_records (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id UUID,
    message_id      UUID,
    model           TEXT NOT NULL,
    input_tokens    BIGINT NOT NULL,
    output_tokens   BIGINT NOT NULL,
    -- What the budget was charged (at most the reservation).
    charged         BIGINT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_time ON usage_records (created_at);
CREATE INDEX usage_records_user_time ON usage_records (user_id, created_at);
