-- Every API key expires now (auth.api_key_default_days / api_key_max_days): a key made
-- before, with no expiry, gets the default lifetime from the upgrade on, rather than living
-- forever. Its owner sees the date on the keys page and can make a new key before it.
UPDATE api_keys SET expires_at = now() + interval '90 days' WHERE expires_at IS NULL;
