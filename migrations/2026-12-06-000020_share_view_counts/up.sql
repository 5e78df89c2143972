-- Share views are counted, not logged one row per request (issue 41, finding 5): one row per
-- link, viewer, action (and file) and minute, whose `views` grows with every reading in that
-- minute. The row is the audit: who read (account, or the client's address), what, when (to
-- the minute, `viewed_at` being the last reading) and how often. A flood of reads costs one
-- row per minute, not one per request.

ALTER TABLE share_views
    -- The minute the row counts (UTC, truncated).
    ADD COLUMN minute     TIMESTAMPTZ,
    -- How many readings of that minute the row stands for.
    ADD COLUMN views      BIGINT NOT NULL DEFAULT 1 CHECK (views >= 1),
    -- Who, as the counter is keyed: `user:<uuid>` for an account, `addr:<sha256 hex>` of the
    -- client address for nobody, `anonymous` when not even the address is known.
    ADD COLUMN viewer_key TEXT;

UPDATE share_views
   SET minute = date_trunc('minute', viewed_at, 'UTC'),
       viewer_key = COALESCE('user:' || viewer_id::text,
                             'addr:' || encode(sha256(convert_to(viewer_address, 'UTF8')), 'hex'),
                             'anonymous');

-- The rows already written become counters: the first row of each key keeps the count and
-- the latest time, the others go.
UPDATE share_views v
   SET views = d.n, viewed_at = d.last
  FROM (SELECT min(id) AS keep, count(*) AS n, max(viewed_at) AS last
          FROM share_views
         GROUP BY share_id, viewer_key, action, COALESCE(file, ''), minute
        HAVING count(*) > 1) d
 WHERE v.id = d.keep;
DELETE FROM share_views v
 USING share_views w
 WHERE v.share_id = w.share_id AND v.viewer_key = w.viewer_key AND v.action = w.action
   AND COALESCE(v.file, '') = COALESCE(w.file, '') AND v.minute = w.minute AND v.id > w.id;

ALTER TABLE share_views
    ALTER COLUMN minute SET NOT NULL,
    ALTER COLUMN viewer_key SET NOT NULL;

CREATE UNIQUE INDEX share_views_counter
    ON share_views (share_id, viewer_key, action, (COALESCE(file, '')), minute);
