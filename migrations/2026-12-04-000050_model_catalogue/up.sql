-- Which catalogue models a role may use, deny-by-default like its tools. `*` allows every
-- model; the roles that exist when the catalogue arrives keep every model they could use.
ALTER TABLE roles ADD COLUMN models TEXT[] NOT NULL DEFAULT '{}';
UPDATE roles SET models = '{*}';

-- Usage by how it is charged: of the input, what the provider's prompt cache read and
-- wrote; the call's cost in money at the model's price (null: the model is unpriced).
ALTER TABLE usage_records
    ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN cost NUMERIC(20, 9),
    ADD COLUMN currency TEXT;
