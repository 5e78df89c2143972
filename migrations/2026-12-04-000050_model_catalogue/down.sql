ALTER TABLE usage_records DROP COLUMN cache_read_tokens, DROP COLUMN cache_write_tokens,
    DROP COLUMN cost, DROP COLUMN currency;
ALTER TABLE roles DROP COLUMN models;
