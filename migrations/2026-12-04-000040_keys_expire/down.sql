-- Nothing to undo: an expiry given to a key stays.
SELECT 1;
