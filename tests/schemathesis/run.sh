#!/usr/bin/env bash
# Schemathesis against the live server: starts the debug server binary (target/debug/agentchat,
# or $AGENTCHAT_BIN) on a free loopback port with a database and workspace of its own, creates
# an admin and a member, and runs `schemathesis run` on GET /api/openapi.json with the checks
# not_a_server_error, response_schema_conformance, status_code_conformance and
# content_type_conformance: once as the admin (every operation) and once as the member (what
# a non-admin sees, 403s on /api/admin included). Bounded by --max-time per run (CI: ~3 min).
#
#   tests/schemathesis/run.sh                 # the CI run
#   ST_MAX_TIME=600 ST_MAX_EXAMPLES=500 tests/schemathesis/run.sh   # a longer one
#
# The last line is `SCHEMATHESIS: PASS` or `SCHEMATHESIS: FAIL (...)` (exit status 0 / 1).
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)

BIN="${AGENTCHAT_BIN:-$ROOT/target/debug/agentchat}"
if [ ! -x "$BIN" ]; then
  echo "server binary not found at $BIN: build it first (cargo build -p agentchat) or set AGENTCHAT_BIN" >&2
  echo "SCHEMATHESIS: FAIL (no server binary)"
  exit 2
fi

VENV="$HERE/.venv"
ST_VERSION="${ST_VERSION:-4.32.5}"
if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION"
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
DB="agentchat_schemathesis_$(date +%s)_$$"
# The pgvector cluster when there is one (`.ci/run` starts it), so that the knowledge
# operations are exercised for real rather than answering 503.
if [ -n "${AGENTCHAT_PGVECTOR_URL:-}" ]; then
  PG="${TEST_DATABASE_URL:-${AGENTCHAT_PGVECTOR_URL%/}/postgres}"
else
  PG="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
fi
WORK=$(mktemp -d)
LOG="$WORK/server.log"

SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  psql -q "$PG" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

DATABASE_URL="${PG%/*}/$DB" \
AGENTCHAT_BIND="127.0.0.1:$PORT" \
AGENTCHAT_WORKSPACE_DIR="$WORK/workspaces" \
AGENTCHAT_LLM_PROVIDER=demo \
AGENTCHAT_COOKIE_SECURE=false \
RUST_LOG="${RUST_LOG:-warn}" \
  "$BIN" >"$LOG" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 60); do
  curl -fsS "$BASE/readyz" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG"; echo "SCHEMATHESIS: FAIL (server did not start)"; exit 1; }
  sleep 0.5
done

# The first account is the admin; passwords are long enough for the server's rule.
token() {
  curl -fsS -X POST "$BASE/api/auth/register" -H 'content-type: application/json' \
    -d "{\"username\":\"$1\",\"password\":\"schemathesis-pass-$1\"}" >/dev/null
  curl -fsS -X POST "$BASE/api/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"$1\",\"password\":\"schemathesis-pass-$1\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
ADMIN=$(token st_admin)
MEMBER=$(token st_member)
# The tokens must work, or every answer would be a (conforming) 401.
curl -fsS "$BASE/api/admin/users" -H "authorization: Bearer $ADMIN" >/dev/null
curl -fsS "$BASE/api/me" -H "authorization: Bearer $MEMBER" >/dev/null
# Something to find: a conversation and a file of each user's.
for t in "$ADMIN" "$MEMBER"; do
  curl -fsS -X POST "$BASE/api/conversations" -H "authorization: Bearer $t" \
    -H 'content-type: application/json' -d '{"title":"seed"}' >/dev/null
  curl -fsS -X PUT "$BASE/api/files/notes.txt" -H "authorization: Bearer $t" \
    -H 'content-type: application/octet-stream' --data-binary 'hello' >/dev/null
  # A collection with a file, when collections are on here.
  if c=$(curl -fsS -X POST "$BASE/api/collections" -H "authorization: Bearer $t" \
      -H 'content-type: application/json' -d '{"name":"seed"}' 2>/dev/null); then
    cid=$(echo "$c" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    curl -fsS -X PUT "$BASE/api/collections/$cid/files/seed.md" -H "authorization: Bearer $t" \
      -H 'content-type: application/octet-stream' --data-binary '# Seed\n\nRefunds take thirty days.' >/dev/null
  fi
done

CHECKS=not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance
run() { # name token [extra args]
  local name=$1 tok=$2 max_time=$3; shift 3
  echo "==> schemathesis as $name"
  "$VENV/bin/schemathesis" run "$BASE/api/openapi.json" --url "$BASE" \
    --checks "$CHECKS" \
    -H "Authorization: Bearer $tok" \
    --max-time "$max_time" \
    --max-examples "${ST_MAX_EXAMPLES:-40}" \
    --phases examples,coverage,fuzzing \
    --request-timeout 20 \
    --workers 1 \
    --seed "${ST_SEED:-1}" \
    --no-color \
    --report junit --report-junit-path "$WORK/$name.xml" \
    --warnings off \
    "$@"
}

failed=()
# Logout and refresh with a random token only exercise 401s; login is throttled per
# address, so the admin run keeps its token valid by never changing the admin's own role.
run admin "$ADMIN" "${ST_MAX_TIME:-90}" || failed+=(admin)
run member "$MEMBER" "${ST_MAX_TIME:-60}" || failed+=(member)

# What the server answered over both runs, by status class (from its own metrics).
curl -fsS "$BASE/metrics" | python3 -c '
import re, sys, collections
n = collections.Counter()
for line in sys.stdin:
    m = re.match(r"agentchat_http_requests_total\{.*status=\"(\d)\d\d\".*\} (\d+)", line)
    if m: n[m.group(1) + "xx"] += int(m.group(2))
print("server answers by status: " + " ".join(f"{k}={n[k]}" for k in sorted(n)))
' || true

if grep -E ' (panicked|ERROR) ' "$LOG" >/dev/null; then
  echo "--- server log errors:"
  grep -E ' (panicked|ERROR) ' "$LOG" | head -20
fi
if [ ${#failed[@]} -eq 0 ]; then
  echo "SCHEMATHESIS: PASS"
else
  echo "SCHEMATHESIS: FAIL (${failed[*]})"
  exit 1
fi
