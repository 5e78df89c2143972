-- A role's code interpreter limits (issue 47): each tightens `[sandbox]` for the role's users;
-- NULL is the server's setting. The API refuses a value above the server's, and the tool takes
-- the smaller of the two anyway, so a lowered `[sandbox]` still wins.
CREATE TABLE role_sandbox (
    role             TEXT PRIMARY KEY REFERENCES roles (name) ON DELETE CASCADE,
    timeout_secs     INTEGER CHECK (timeout_secs > 0),
    memory_mb        INTEGER CHECK (memory_mb > 0),
    max_processes    INTEGER CHECK (max_processes > 0),
    max_output_bytes INTEGER CHECK (max_output_bytes > 0),
    max_files        INTEGER CHECK (max_files > 0),
    max_file_bytes   BIGINT CHECK (max_file_bytes > 0),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
