-- The admin audit trail: one row per administrative change (who, when, what, before -> after).
-- No foreign keys: a row outlives the admin who made it and the account it was about.
CREATE TABLE admin_changes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    actor_id    UUID,
    actor_name  TEXT NOT NULL,
    -- What was done, e.g. `user.delete`, `role.update`, `conversation.view`.
    kind        TEXT NOT NULL,
    -- What it was done to, as people read it (a username, a role or tool name, an id).
    target      TEXT NOT NULL,
    -- The target's id when it has one, so rows about one account group together.
    target_id   UUID,
    before      JSONB,
    after       JSONB
);
CREATE INDEX admin_changes_time ON admin_changes (created_at DESC, id DESC);
CREATE INDEX admin_changes_actor ON admin_changes (actor_id, id DESC);
CREATE INDEX admin_changes_kind ON admin_changes (kind, id DESC);

-- Accounts an admin deleted: the usage ledger keeps their rows (what was spent stays
-- accountable), and reports name them through this tombstone.
CREATE TABLE deleted_users (
    id          UUID PRIMARY KEY,
    username    TEXT NOT NULL,
    deleted_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_by  UUID
);
ALTER TABLE usage_records DROP CONSTRAINT usage_records_user_id_fkey;
