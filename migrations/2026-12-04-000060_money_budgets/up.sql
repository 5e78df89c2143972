-- Budgets in money (issue 30): a role may cap what its users spend per period in one
-- currency, next to (or instead of) its token cap. Reserved and settled like tokens, in
-- exact decimals, in a ledger of its own so the token path stays as it is.
ALTER TABLE roles
    ADD COLUMN budget_amount NUMERIC(20, 9) CHECK (budget_amount >= 0),
    ADD COLUMN budget_currency TEXT CHECK (budget_currency ~ '^[A-Z]{3}$'),
    ADD CONSTRAINT roles_budget_money_pair
        CHECK ((budget_amount IS NULL) = (budget_currency IS NULL));

CREATE TABLE money_periods (
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    period       TEXT NOT NULL CHECK (period IN ('day', 'week', 'month', 'total')),
    period_start TIMESTAMPTZ NOT NULL,
    currency     TEXT NOT NULL,
    spent        NUMERIC(20, 9) NOT NULL DEFAULT 0 CHECK (spent >= 0),
    reserved     NUMERIC(20, 9) NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, period, period_start, currency)
);

-- Each outstanding money reservation, swept like budget_holds when its process dies or its
-- turn no longer holds its conversation.
CREATE TABLE money_holds (
    id           UUID PRIMARY KEY,
    user_id      UUID NOT NULL,
    period       TEXT NOT NULL,
    period_start TIMESTAMPTZ NOT NULL,
    currency     TEXT NOT NULL,
    amount       NUMERIC(20, 9) NOT NULL CHECK (amount >= 0),
    expires_at   TIMESTAMPTZ NOT NULL,
    process_id   UUID,
    turn_id      UUID,
    FOREIGN KEY (user_id, period, period_start, currency)
        REFERENCES money_periods (user_id, period, period_start, currency) ON DELETE CASCADE
);
CREATE INDEX money_holds_expiry ON money_holds (expires_at);
CREATE INDEX money_holds_turn ON money_holds (turn_id) WHERE turn_id IS NOT NULL;
