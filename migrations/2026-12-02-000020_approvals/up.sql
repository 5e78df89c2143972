-- Approval by policy: a role may require that a person (the user chatting, or an admin)
-- confirms a tool call before it runs. `approvals` maps a tool name (or `{server}__*`) to
-- `none`, `user` or `admin`; tools it does not name keep their default.
ALTER TABLE roles ADD COLUMN approvals JSONB NOT NULL DEFAULT '{}'::jsonb;

-- One row per tool call that waits for (or waited for) a decision. The arguments stored here
-- are the ones that run when approved: they are never re-read from the model. A paused turn
-- holds nothing else: no claim on its conversation, no budget.
CREATE TABLE approvals (
    id UUID PRIMARY KEY,
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    username TEXT NOT NULL,
    -- The turn that paused, and its step: the assistant message whose calls wait.
    turn_id UUID NOT NULL,
    message_id UUID NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    server TEXT,
    arguments JSONB NOT NULL,
    approver TEXT NOT NULL CHECK (approver IN ('user', 'admin')),
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
    decided_by UUID,
    decided_by_name TEXT,
    note TEXT,
    decided_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL,
    -- Set when a process took the decided step over to run it (exactly once).
    resumed_at TIMESTAMPTZ,
    UNIQUE (message_id, tool_call_id)
);
CREATE INDEX approvals_pending ON approvals (expires_at) WHERE state = 'pending';
CREATE INDEX approvals_user ON approvals (user_id, created_at DESC);
CREATE INDEX approvals_recent ON approvals (created_at DESC);
CREATE INDEX approvals_step ON approvals (message_id);
CREATE INDEX approvals_unresumed ON approvals (conversation_id) WHERE resumed_at IS NULL;

-- The decision on a call that needed one, on the call's audit row.
ALTER TABLE audit_log
    ADD COLUMN approval_policy TEXT,
    ADD COLUMN approval_decision TEXT,
    ADD COLUMN approval_decided_by TEXT,
    ADD COLUMN approval_note TEXT,
    ADD COLUMN approval_decided_at TIMESTAMPTZ;
CREATE INDEX audit_log_decision ON audit_log (approval_decision, created_at DESC)
    WHERE approval_decision IS NOT NULL;
