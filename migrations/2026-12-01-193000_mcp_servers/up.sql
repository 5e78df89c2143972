-- Streamable HTTP MCP servers added through the admin API (stdio servers only come from the
-- config file). Header values are secrets: the API never lists them back.
CREATE TABLE mcp_servers (
    name TEXT PRIMARY KEY CHECK (name ~ '^[a-z0-9-]{1,24}$'),
    url TEXT NOT NULL,
    headers JSONB NOT NULL DEFAULT '{}'::jsonb,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    timeout_ms BIGINT NOT NULL CHECK (timeout_ms > 0),
    forward_identity BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
