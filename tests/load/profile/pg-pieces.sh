#!/usr/bin/env bash
# What the pieces of a turn's writes cost Postgres, in CPU per piece: a way to price a design
# lever (fewer rows, indexes, foreign keys, commits) in minutes, without building the server.
#
# Each piece is a pgbench script shaped like what a turn sends (same tables, same kinds of
# statement); its cost is the CPU of every process of the Postgres cluster (user + system,
# backends and background) over the run, divided by the transactions pgbench completed. A
# lever is measured as a pair: the piece as the turn has it now, and the piece with the lever
# applied, alternated ROUNDS times in one sitting (read the spread, not one number).
#
# Usage: run the load kit once with --keep-db, then
#   [PIECES=regex] tests/load/profile/pg-pieces.sh agentchat_load_<id> [SECS] [ROUNDS] [CLIENTS]
# Needs: pgbench and psql on the PATH, Postgres on the same host (its /proc is read), the
# cluster's superuser. PGHOST/PGPORT pick the cluster (default 127.0.0.1:5432). Four copies of
# the database are made (<db>_now, <db>_lever, <db>_trigger, <db>_before) and dropped at the
# end; the kit's is untouched.
set -euo pipefail

src=${1:?usage: pg-pieces.sh KIT_DATABASE [SECS] [ROUNDS] [CLIENTS]}
secs=${2:-10}
rounds=${3:-2}
clients=${4:-8}
# Only the pieces whose name matches this (extended) regular expression, e.g. PIECES=message.
pieces=${PIECES:-.}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
now_db="${src}_now"
lever_db="${src}_lever"
trigger_db="${src}_trigger"
before_db="${src}_before"
work=$(mktemp -d)
trap 'rm -rf "$work"; psql -Xq -d postgres -c "DROP DATABASE IF EXISTS $now_db" -c "DROP DATABASE IF EXISTS $lever_db" -c "DROP DATABASE IF EXISTS $trigger_db" -c "DROP DATABASE IF EXISTS $before_db" >/dev/null 2>&1 || true' EXIT

q() { PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

data_dir=$(q postgres "SHOW data_directory")
postmaster=$(head -1 "$data_dir/postmaster.pid")

# CPU ticks of the whole cluster: the postmaster, its children that ended (reaped into its
# cutime/cstime) and those still running.
cluster_ticks() {
    local total pid
    total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
    for pid in $(pgrep -P "$postmaster"); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

for db in "$now_db" "$lever_db" "$trigger_db" "$before_db"; do
    q postgres "DROP DATABASE IF EXISTS $db"
    q postgres "CREATE DATABASE $db TEMPLATE $src"
    q "$db" "CREATE TABLE piece_conversations AS
               SELECT row_number() OVER () AS n, id FROM conversations;
             CREATE TABLE piece_periods AS
               SELECT row_number() OVER () AS n, user_id, period, period_start
                 FROM budget_periods"
    q "$db" "VACUUM ANALYZE"
done
conversations=$(q "$now_db" "SELECT count(*) FROM piece_conversations")
periods=$(q "$now_db" "SELECT count(*) FROM piece_periods")
[ "$conversations" -gt 0 ] && [ "$periods" -gt 0 ] || {
    echo "pg-pieces: $src has no conversations or budget periods (run the kit with --keep-db)" >&2
    exit 1
}

# The levers, applied to the second copy only. (A kit database from 2026-12-08 on has no
# `budget_holds_expiry` or `budget_holds_turn_idx`: nothing read them.)
q "$lever_db" "DROP INDEX IF EXISTS conversations_active_turn_idx;
               DROP INDEX IF EXISTS conversations_active_process;
               DROP INDEX IF EXISTS budget_holds_expiry;
               DROP INDEX budget_holds_process;
               DROP INDEX IF EXISTS budget_holds_turn_idx;
               ALTER TABLE turn_ends DROP CONSTRAINT turn_ends_conversation_id_fkey;
               ALTER TABLE messages ALTER COLUMN search_vector DROP EXPRESSION"

# Before `release_hot` (2026-12-07): the claim's columns indexed, so a release wrote index
# entries (a kit database of an older build has these already).
q "$before_db" "CREATE INDEX IF NOT EXISTS conversations_active_process ON conversations
                  (active_process_id) WHERE active_process_id IS NOT NULL;
                CREATE INDEX IF NOT EXISTS conversations_active_turn_idx ON conversations
                  (active_turn_id) WHERE active_turn_id IS NOT NULL"

# Lever: the messages' search vector filled by a row trigger (PL/pgSQL keeps its plan for the
# session) instead of the generated column's expression (planned again for every insert).
q "$trigger_db" "ALTER TABLE messages ALTER COLUMN search_vector DROP EXPRESSION;
                 CREATE FUNCTION piece_search_vector() RETURNS trigger LANGUAGE plpgsql AS \$\$
                 BEGIN
                   NEW.search_vector := CASE WHEN NEW.role IN ('user', 'assistant') THEN
                       to_tsvector('simple', NEW.content)
                       || to_tsvector('simple', translate(NEW.content, '/\\.', '   ')) END;
                   RETURN NEW;
                 END \$\$;
                 CREATE TRIGGER piece_search_vector BEFORE INSERT ON messages
                   FOR EACH ROW EXECUTE FUNCTION piece_search_vector()"

pick_conversation="\\set c random(1, $conversations)"
pick_period="\\set p random(1, $periods)"
period_row="FROM piece_periods x WHERE x.n = :p AND b.user_id = x.user_id
              AND b.period = x.period AND b.period_start = x.period_start"

cat > "$work/statement.sql" <<EOF
$pick_conversation
SELECT id FROM piece_conversations WHERE n = :c;
EOF
cat > "$work/period_update.sql" <<EOF
$pick_period
UPDATE budget_periods b SET reserved = b.reserved, updated_at = now() $period_row;
EOF
# The claim and the release of a conversation, as a turn's start and end sent them before
# `release_hot` (the release set updated_at too).
cat > "$work/claim_release.sql" <<EOF
$pick_conversation
UPDATE conversations SET active_turn_id = gen_random_uuid(), active_turn_at = now(),
       updated_at = now(), active_process_id = gen_random_uuid()
 WHERE id = (SELECT id FROM piece_conversations WHERE n = :c);
UPDATE conversations SET active_turn_id = NULL, active_turn_at = NULL,
       active_process_id = NULL, updated_at = now()
 WHERE id = (SELECT id FROM piece_conversations WHERE n = :c);
EOF
# Now: the release leaves updated_at alone and the active_* columns are not indexed, so the
# release is a HOT update.
sed 's/active_process_id = NULL, updated_at = now()/active_process_id = NULL/' \
    "$work/claim_release.sql" > "$work/claim_release_hot.sql"
# A hold of :amount reserved on the picked period (the statement that stores it), and the
# end's settlement of that hold; each budget script below is made of them.
hold_insert="WITH upd AS (UPDATE budget_periods b SET reserved = b.reserved + :amount,
                    updated_at = now() $period_row RETURNING b.user_id, b.period, b.period_start)
INSERT INTO budget_holds (id, user_id, period, period_start, amount, expires_at, process_id,
                          turn_id)
SELECT gen_random_uuid(), user_id, period, period_start, :amount, now() + interval '1 hour',
       gen_random_uuid(), gen_random_uuid() FROM upd RETURNING id \\gset"
settle="WITH h AS (DELETE FROM budget_holds WHERE id = :id
           RETURNING user_id, period, period_start, amount)
UPDATE budget_periods b SET reserved = b.reserved - h.amount, spent = b.spent,
       updated_at = now() FROM h
 WHERE b.user_id = h.user_id AND b.period = h.period AND b.period_start = h.period_start;"
# A turn's budget before the start locked first: reserved and held large, cut before the
# start's COMMIT, settled at the end.
cat > "$work/hold_cycle.sql" <<EOF
$pick_period
\\set amount 1000
BEGIN;
$hold_insert
WITH h AS (UPDATE budget_holds SET amount = amount - 500 WHERE id = :id
           RETURNING user_id, period, period_start)
UPDATE budget_periods b SET reserved = b.reserved - 500, updated_at = now() FROM h
 WHERE b.user_id = h.user_id AND b.period = h.period AND b.period_start = h.period_start;
COMMIT;
$settle
EOF
# Now: the start locks the period row in its first round trip and writes it, with the hold
# at its fitted size, in its second (`budget_early`); the end settles as before.
cat > "$work/lock_hold_cycle.sql" <<EOF
$pick_period
\\set amount 500
BEGIN;
SELECT b.reserved FROM budget_periods b JOIN piece_periods x ON x.n = :p
   AND b.user_id = x.user_id AND b.period = x.period AND b.period_start = x.period_start
   FOR NO KEY UPDATE OF b;
$hold_insert
COMMIT;
$settle
EOF
# Lever: the same period updates with no hold rows at all.
cat > "$work/period_cycle.sql" <<EOF
$pick_period
BEGIN;
UPDATE budget_periods b SET reserved = b.reserved + 1000, updated_at = now() $period_row;
UPDATE budget_periods b SET reserved = b.reserved - 500, updated_at = now() $period_row;
COMMIT;
UPDATE budget_periods b SET reserved = b.reserved - 500, spent = b.spent,
       updated_at = now() $period_row;
EOF
# A message row as a turn stores it (a user message of 60 words, with paths in it): before, a
# one-row unnest; now, one row without unnest (as VALUES: the server binds arrays and takes
# their first elements, a few µs dearer, see PROFILE.md); the search vector generated by the
# table, or (levers) computed by the statement or a trigger (the lever copies' column is plain).
message_columns="id, conversation_id, role, content, tool_calls, tool_call_id, status,
                 status_reason, model, input_tokens, output_tokens, duration_ms, history_cost,
                 attachments, citations"
message_text="$(printf 'please read /var/log/app-%s.log and count the errors by hour ' $(seq 1 6))"
message_vector="CASE WHEN r.role IN ('user', 'assistant') THEN to_tsvector('simple', r.content)
                  || to_tsvector('simple', translate(r.content, '/\\.', '   ')) END"
message_unnest="FROM unnest(ARRAY[gen_random_uuid()], ARRAY[(SELECT id FROM piece_conversations
                 WHERE n = :c)], ARRAY['user'], ARRAY['$message_text' || CAST(:c AS text)],
                 ARRAY[NULL::jsonb], ARRAY[NULL::text], ARRAY['complete'], ARRAY[NULL::text],
                 ARRAY[NULL::text],
                 ARRAY[NULL::int8], ARRAY[NULL::int8], ARRAY[NULL::int8], ARRAY[90],
                 ARRAY[NULL::jsonb], ARRAY[NULL::jsonb]) WITH ORDINALITY
                 AS r ($message_columns, n) ORDER BY n"
message_values="FROM (VALUES (gen_random_uuid(), (SELECT id FROM piece_conversations WHERE n = :c),
                 'user', '$message_text' || CAST(:c AS text), NULL::jsonb, NULL::text, 'complete',
                 NULL::text, NULL::text, NULL::int8, NULL::int8, NULL::int8, 90, NULL::jsonb,
                 NULL::jsonb))
                 AS r ($message_columns)"
for shape in unnest values; do
    from_rows=message_$shape
    cat > "$work/message_$shape.sql" <<EOF
$pick_conversation
INSERT INTO messages ($message_columns) SELECT $message_columns ${!from_rows};
EOF
    cat > "$work/message_${shape}_vector.sql" <<EOF
$pick_conversation
INSERT INTO messages ($message_columns, search_vector)
SELECT $message_columns, $message_vector ${!from_rows};
EOF
done
# A usage row as a turn stores it: before, a one-row unnest; now, one row without unnest.
usage_columns="user_id, conversation_id, message_id, model, input_tokens, output_tokens, charged,
               cache_read_tokens, cache_write_tokens, cost, currency, fallback_from,
               fallback_reason"
usage_user="(SELECT c.user_id FROM conversations c JOIN piece_conversations x ON x.id = c.id
             WHERE x.n = :c)"
cat > "$work/usage_unnest.sql" <<EOF
$pick_conversation
INSERT INTO usage_records ($usage_columns) SELECT $usage_columns
  FROM unnest(ARRAY[$usage_user], ARRAY[NULL::uuid], ARRAY[NULL::uuid], ARRAY['demo'],
              ARRAY[CAST(:c AS int8)], ARRAY[32], ARRAY[32 + CAST(:c AS int8)], ARRAY[0],
              ARRAY[0], ARRAY[NULL::numeric], ARRAY[NULL::text], ARRAY[NULL::text],
              ARRAY[NULL::text])
       WITH ORDINALITY AS r ($usage_columns, n) ORDER BY n;
EOF
cat > "$work/usage_values.sql" <<EOF
$pick_conversation
INSERT INTO usage_records ($usage_columns) SELECT $usage_columns
  FROM (VALUES ($usage_user, NULL::uuid, NULL::uuid, 'demo', CAST(:c AS int8), 32,
                32 + CAST(:c AS int8), 0, 0, NULL::numeric, NULL::text, NULL::text, NULL::text))
       AS r ($usage_columns);
EOF
# The start's reads of the user (account and role, a few of the inputs' columns) and its lock
# on the user's token period: before, two statements, the lock reading the user and role
# again; now, one, the lock a lateral subquery of the inputs (server/src/turn/sql/inputs.rs).
# Each in a transaction of its own, as the start's first round trip is.
user_of_period="(SELECT user_id FROM piece_periods WHERE n = :p)"
period_of="CASE r.budget_period WHEN 'day' THEN date_trunc('day', now())
                 WHEN 'week' THEN date_trunc('week', now()) WHEN 'month' THEN date_trunc('month', now())
                 WHEN 'total' THEN 'epoch'::timestamptz END"
cat > "$work/inputs_lock_two.sql" <<EOF
$pick_period
BEGIN;
WITH u AS (SELECT id, role, token_budget, token_version FROM users WHERE id = $user_of_period)
SELECT u.token_version, r.tools, r.budget_period FROM u JOIN roles r ON r.name = u.role;
WITH lim AS (SELECT COALESCE(u.token_budget, r.token_budget) AS tokens, r.budget_period
               FROM users u JOIN roles r ON r.name = u.role WHERE u.id = $user_of_period)
SELECT r.tokens - b.spent - b.reserved AS left, b.period, b.period_start
  FROM budget_periods b JOIN lim r ON b.period = r.budget_period
 WHERE b.user_id = $user_of_period AND r.tokens IS NOT NULL AND b.period_start = $period_of
   FOR NO KEY UPDATE OF b;
COMMIT;
EOF
# The inputs with the lock as a lateral subquery (CLAIMED: what the lock waits for).
inputs_with_lock="SELECT u.token_version, r.tools, r.budget_period, p.left, p.period, p.period_start
  FROM u JOIN roles r ON r.name = u.role
  LEFT JOIN LATERAL (
      SELECT coalesce(u.token_budget, r.token_budget) - b.spent - b.reserved AS left,
             b.period, b.period_start
        FROM budget_periods b
       WHERE CLAIMED AND coalesce(u.token_budget, r.token_budget) IS NOT NULL
         AND b.user_id = u.id AND b.period = r.budget_period AND b.period_start = $period_of
         FOR NO KEY UPDATE OF b) p ON true"
cat > "$work/inputs_lock_one.sql" <<EOF
$pick_period
BEGIN;
WITH u AS (SELECT id, role, token_budget, token_version FROM users WHERE id = $user_of_period)
${inputs_with_lock/CLAIMED/true};
COMMIT;
EOF
# The claim with them: before, the claim a statement of its own and the inputs with the
# lock another; now, the claim a CTE of the inputs statement, the lock waiting for it. Rolled
# back, so every run claims a free conversation (both shapes pay the same rollback).
conversation_of="(SELECT id FROM piece_conversations WHERE n = :c)"
owner_of="(SELECT user_id FROM conversations WHERE id = $conversation_of)"
claim_update="UPDATE conversations SET active_turn_id = gen_random_uuid(), active_turn_at = now(),
       updated_at = now(), active_process_id = gen_random_uuid(), archived_at = NULL
 WHERE id = $conversation_of AND (active_turn_id IS NULL OR active_turn_at < now())
RETURNING id, user_id, title, model, created_at, updated_at, pinned, archived_at,
          system_prompt, title_auto, assistant_id, memory_enabled, forked_from"
cat > "$work/claim_inputs_two.sql" <<EOF
$pick_conversation
BEGIN;
$claim_update;
WITH u AS (SELECT id, role, token_budget, token_version FROM users WHERE id = $owner_of)
${inputs_with_lock/CLAIMED/true};
ROLLBACK;
EOF
cat > "$work/claim_inputs_one.sql" <<EOF
$pick_conversation
BEGIN;
WITH cl AS ($claim_update),
     u AS (SELECT id, role, token_budget, token_version FROM users WHERE id = $owner_of)
${inputs_with_lock/CLAIMED/EXISTS (SELECT 1 FROM cl)}
  LEFT JOIN cl ON true;
ROLLBACK;
EOF
cat > "$work/turn_end.sql" <<EOF
$pick_conversation
INSERT INTO turn_ends (turn_id, conversation_id, event)
SELECT gen_random_uuid(), id, '{"type":"done","usage":{"input_tokens":100,"output_tokens":32}}'
  FROM piece_conversations WHERE n = :c;
EOF

# µs of cluster CPU per pgbench transaction of one script.
# A fourth argument paces pgbench (e.g. --rate 600: transactions per second in all).
measure() {
    local db=$1 script=$2 options=${3:-} pace=${4:-} before after done_tx
    before=$(cluster_ticks)
    # shellcheck disable=SC2086 # $pace is empty or one option with its value
    done_tx=$(PGOPTIONS="$options" pgbench -n -M prepared -c "$clients" -T "$secs" $pace \
        -f "$work/$script" "$db" 2>&1 | awk '/actually processed/ {print $NF}')
    sleep 0.3
    after=$(cluster_ticks)
    [ -n "$done_tx" ] && [ "$done_tx" -gt 0 ] || { echo "pg-pieces: $script failed" >&2; exit 1; }
    echo $(( (after - before) * 1000000 / $(getconf CLK_TCK) / done_tx ))
}

# Each piece's runs, and the pieces in the order they were first measured.
declare -A runs
order=()
row() {
    local name=$1 db=$2 script=$3 options=${4:-} pace=${5:-}
    [[ $name =~ $pieces ]] || return 0
    [ -n "${runs[$name]+set}" ] || order+=("$name")
    runs[$name]="${runs[$name]:-}$(measure "$db" "$script" "$options" "$pace") "
}
# The row pieces commit asynchronously: a commit costs them all the same, and its wait is
# most of their spread.
async="-c synchronous_commit=off"
for _ in $(seq "$rounds"); do
    row "one statement (a round trip)" "$now_db" statement.sql
    row "one HOT update, synchronous commit" "$now_db" period_update.sql
    row "one HOT update, asynchronous commit" "$now_db" period_update.sql \
        "-c synchronous_commit=off"
    # The same commit at the rates a turn's two commits run at c=128 and at half load here
    # (~1,200 and ~600 a second): a commit costs more the fewer there are (no group commit,
    # a backend woken for each).
    row "one HOT update, synchronous commit, 1,200/s" "$now_db" period_update.sql "" "--rate 1200"
    row "one HOT update, synchronous commit, 600/s" "$now_db" period_update.sql "" "--rate 600"
    row "claim + release (before: both non-HOT)" "$before_db" claim_release.sql
    row "claim + release (now: HOT release)" "$now_db" claim_release_hot.sql
    row "budget: reserve large, cut, settle (before)" "$now_db" hold_cycle.sql
    row "budget: lock, hold once, settle (now)" "$now_db" lock_hold_cycle.sql
    row "budget: hold rows, pkey only (lever)" "$lever_db" hold_cycle.sql
    row "budget: period rows only (lever)" "$now_db" period_cycle.sql
    row "message row: unnest, vector generated (before)" "$now_db" message_unnest.sql "$async"
    row "message row: one row, vector generated (now)" "$now_db" message_values.sql "$async"
    row "message row: unnest, vector by a trigger (lever)" "$trigger_db" message_unnest.sql "$async"
    row "message row: unnest, vector in the statement (lever)" "$lever_db" message_unnest_vector.sql "$async"
    row "message row: one row, vector in the statement (lever)" "$lever_db" message_values_vector.sql "$async"
    row "usage row: unnest (before)" "$now_db" usage_unnest.sql "$async"
    row "usage row: one row (now)" "$now_db" usage_values.sql "$async"
    row "start's inputs and period lock: two statements (before)" "$now_db" \
        inputs_lock_two.sql "$async"
    row "start's inputs and period lock: one statement (now)" "$now_db" inputs_lock_one.sql "$async"
    row "start's claim, inputs and lock: two statements (before)" "$now_db" claim_inputs_two.sql
    row "start's claim, inputs and lock: one statement (now)" "$now_db" claim_inputs_one.sql
    row "turn end row, with its foreign key (now)" "$now_db" turn_end.sql
    row "turn end row, no foreign key (lever)" "$lever_db" turn_end.sql
done

echo "Postgres CPU per piece, µs ($rounds rounds of ${secs} s, $clients clients," \
     "$PGHOST:$PGPORT, copies of $src)"
echo
echo "| piece | µs per run, each round |"
echo "|---|---|"
for name in "${order[@]}"; do
    echo "| $name | ${runs[$name]% } |"
done
