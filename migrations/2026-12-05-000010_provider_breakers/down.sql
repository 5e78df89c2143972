ALTER TABLE usage_records DROP COLUMN fallback_from, DROP COLUMN fallback_reason;
DROP TABLE provider_breakers;
