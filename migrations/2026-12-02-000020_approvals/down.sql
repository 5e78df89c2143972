DROP INDEX IF EXISTS audit_log_decision;
ALTER TABLE audit_log
    DROP COLUMN approval_policy,
    DROP COLUMN approval_decision,
    DROP COLUMN approval_decided_by,
    DROP COLUMN approval_note,
    DROP COLUMN approval_decided_at;
DROP TABLE approvals;
ALTER TABLE roles DROP COLUMN approvals;
