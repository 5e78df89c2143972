#!/usr/bin/env bash
# Server memory while a long conversation is read many times at once (finding 10 of the third
# review): one user's conversation of MIB MiB (default 45; 1 KiB messages), N (default 16)
# concurrent exports of it as JSON, and as many conversation GETs. Prints the server's RSS
# idle, at its peak while the requests run (sampled every 20 ms) and after.
#   tests/load/export_memory.sh [server-binary] [MIB] [N]
# The binary defaults to target/release/agentchat. Postgres at 127.0.0.1:5432 (trust auth).
set -euo pipefail
BIN="${1:-$(cd "$(dirname "$0")/../.." && pwd)/target/release/agentchat}"
MIB="${2:-45}"
N="${3:-16}"
DB="agentchat_export_mem_$$"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
WORK=$(mktemp -d)
cleanup() {
  [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  psql -h 127.0.0.1 -U postgres -qXc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB" AGENTCHAT_BIND="127.0.0.1:$PORT" \
  AGENTCHAT_WORKSPACE_DIR="$WORK/ws" AGENTCHAT_JWT_SECRET="$(head -c 48 /dev/urandom | base64)" \
  RUST_LOG=warn "$BIN" >"$WORK/server.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do curl -sf "$BASE/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status"; }

curl -sf -X POST "$BASE/api/auth/register" -H 'Content-Type: application/json' \
  -d '{"username":"reader","password":"export-memory-1"}' >/dev/null
TOKEN=$(curl -sf -X POST "$BASE/api/auth/login" -H 'Content-Type: application/json' \
  -d '{"username":"reader","password":"export-memory-1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
CONV=$(curl -sf -X POST "$BASE/api/conversations" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{"title":"long"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
ROWS=$((MIB * 1024))
psql -h 127.0.0.1 -U postgres -d "$DB" -qXc "INSERT INTO messages (id, conversation_id, role, content)
  SELECT gen_random_uuid(), '$CONV', CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
         left(repeat('message ' || g || ' of a long conversation. ', 40), 1024)
    FROM generate_series(1, $ROWS) g" >/dev/null
sleep 1
IDLE=$(rss)
PEAK=$IDLE
STAMP="$WORK/running"
touch "$STAMP"
( while [ -f "$STAMP" ]; do R=$(rss); echo "$R"; sleep 0.02; done ) >"$WORK/samples" &
SAMPLER=$!
START=$(date +%s.%N)
for i in $(seq 1 "$N"); do
  curl -sf -o "$WORK/export-$i.json" -H "Authorization: Bearer $TOKEN" "$BASE/api/conversations/$CONV/export?format=json" &
  curl -sf -o "$WORK/get-$i.json" -H "Authorization: Bearer $TOKEN" "$BASE/api/conversations/$CONV" &
done
wait $(jobs -p | grep -v "^$SAMPLER$" | grep -v "^$PID$") 2>/dev/null || true
END=$(date +%s.%N)
rm -f "$STAMP"
wait "$SAMPLER" 2>/dev/null || true
PEAK=$(sort -n "$WORK/samples" | tail -1)
sleep 2
AFTER=$(rss)
SIZE=$(stat -c %s "$WORK/export-1.json")
echo "conversation: $ROWS messages (~$MIB MiB); $N JSON exports of $((SIZE / 1048576)) MiB each and $N GETs at once, in $(python3 -c "print(round($END - $START, 1))") s"
echo "server RSS MiB: idle $IDLE, peak $PEAK (+$(python3 -c "print(round($PEAK - $IDLE, 1))")), 2 s after $AFTER"
