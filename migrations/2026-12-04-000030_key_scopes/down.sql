ALTER TABLE conversations DROP COLUMN key_scopes;
ALTER TABLE api_keys DROP COLUMN scopes;
