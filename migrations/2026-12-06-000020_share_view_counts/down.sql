-- Back to a row per reading in shape; the counts of merged readings are not split again
-- (each counter row stays one row).
DROP INDEX share_views_counter;
ALTER TABLE share_views DROP COLUMN viewer_key, DROP COLUMN views, DROP COLUMN minute;
