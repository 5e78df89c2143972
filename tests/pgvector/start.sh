#!/usr/bin/env bash
# Makes sure a PostgreSQL with pgvector is running for the knowledge tests and prints its URL
# (without a database name) as the last line of stdout:
#
#   postgres://postgres@127.0.0.1:5433
#
# Idempotent: when a Postgres that offers the `vector` extension already answers on the port
# (this cluster from an earlier run, or one of your own), it is used as it is. Otherwise it
# installs Postgres + pgvector (tests/pgvector/install.sh) and starts a persistent cluster in
# $AGENTCHAT_PGVECTOR_DATA (default /var/tmp/agentchat-pgvector) on 127.0.0.1 port
# ${AGENTCHAT_PGVECTOR_PORT:-5433}: trust authentication, user `postgres`, fsync off (test data
# only). It keeps running after the tests; stop it with
#
#   bash tests/pgvector/start.sh --stop
#
# The test suite (tests/support/pgvector.rs) runs this on first use; concurrent runs are
# serialised with flock.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"
# Absolute paths from here on; the cluster owner (postgres) may not be able to read the cwd.
cd /

data="$PGV_DIR/data"
logfile="$PGV_DIR/postgres.log"

exec 9>"${TMPDIR:-/tmp}/agentchat-pgvector-$PGV_PORT.lock"
flock 9

# Everything the cluster's processes start with must not inherit the lock (fd 9), or the
# server would hold it for ever.
psql_q() {
  "$PGV_BIN/psql" -X -q -At -h 127.0.0.1 -p "$PGV_PORT" -U postgres -d postgres -c "$1" 9>&-
}

if [ "${1:-}" = "--stop" ]; then
  if [ -f "$data/postmaster.pid" ]; then
    pgv_as_owner "$PGV_BIN/pg_ctl" -D "$data" -m fast -w stop 9>&-
  else
    pgv_log "no cluster in $data"
  fi
  exit 0
fi

bash "$here/install.sh" 9>&- >&2

# 0 accepting, 1 starting up or shutting down, 2 no answer.
ready() {
  "$PGV_BIN/pg_isready" -q -h 127.0.0.1 -p "$PGV_PORT" -U postgres -d postgres -t 2 9>&-
}

has_vector() {
  [ "$(psql_q "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'" 2>/dev/null)" = "1" ]
}

wait_ready() {
  for _ in $(seq 1 60); do
    ready && return 0
    sleep 1
  done
  return 1
}

state=0
ready || state=$?
if [ "$state" -eq 1 ]; then
  pgv_log "the Postgres on port $PGV_PORT is starting; waiting"
  wait_ready || true
  state=0
  ready || state=$?
fi

if [ "$state" -eq 0 ]; then
  if has_vector; then
    echo "$PGV_URL"
    exit 0
  fi
  pgv_die "a Postgres on 127.0.0.1:$PGV_PORT answers, but not as user postgres with trust authentication, or without the vector extension; stop it, or use another port (AGENTCHAT_PGVECTOR_PORT), or point the tests at a Postgres with pgvector (AGENTCHAT_PGVECTOR_URL)"
fi

# Nothing answers: start (and first create) our cluster.
major="$("$PGV_BIN/postgres" --version | sed -E 's/.* ([0-9]+)(\.[0-9]+)*.*/\1/')"
mkdir -p "$PGV_DIR"
if pgv_is_root; then
  chown postgres:postgres "$PGV_DIR"
fi
chmod 0755 "$PGV_DIR"

if [ -f "$data/PG_VERSION" ] && [ "$(cat "$data/PG_VERSION")" != "$major" ]; then
  pgv_log "removing the test cluster of PostgreSQL $(cat "$data/PG_VERSION") in $data (now $major)"
  rm -rf "$data"
fi
if [ ! -f "$data/PG_VERSION" ]; then
  rm -rf "$data"
  pgv_log "creating a PostgreSQL $major cluster in $data"
  pgv_as_owner "$PGV_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C \
    --no-sync >"$PGV_DIR/initdb.log" 2>&1 9>&- ||
    pgv_die "initdb failed: $(cat "$PGV_DIR/initdb.log")"
fi

# A pid file left by a server that is gone (a killed container, a reboot) whose pid now
# belongs to another process would stop Postgres from starting.
if [ -f "$data/postmaster.pid" ]; then
  pid="$(head -n 1 "$data/postmaster.pid")"
  if ! { [ -n "$pid" ] && grep -qaF -- "$data" "/proc/$pid/cmdline" 2>/dev/null; }; then
    pgv_log "removing the stale $data/postmaster.pid (pid $pid)"
    rm -f "$data/postmaster.pid"
  fi
fi

pgv_log "starting PostgreSQL $major with pgvector on 127.0.0.1:$PGV_PORT (log: $logfile)"
# Test settings: no durability (fsync off), room for many parallel test servers' pools, no
# Unix socket (nothing to clean up after a crash).
opts="-c listen_addresses=127.0.0.1 -p $PGV_PORT -c unix_socket_directories= \
-c max_connections=300 -c shared_buffers=128MB -c fsync=off -c synchronous_commit=off \
-c full_page_writes=off"
# The server outlives this script: it must not keep any descriptor it inherited (the lock,
# a pipe of whatever ran the tests, which would then wait for it for ever).
detached() (
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] && [ "$fd" -lt 255 ]; then
      eval "exec $fd>&-"
    fi
  done
  "$@" </dev/null
)
detached pgv_as_owner "$PGV_BIN/pg_ctl" -D "$data" -l "$logfile" -o "$opts" -w -t 60 start >/dev/null || {
  tail -n 30 "$logfile" >&2 || true
  pgv_die "the cluster in $data did not start on port $PGV_PORT (log above: $logfile)"
}
wait_ready || pgv_die "the cluster started but does not answer on 127.0.0.1:$PGV_PORT"
has_vector || pgv_die "the cluster on port $PGV_PORT has no vector extension (install: $PGV_INSTALL)"
echo "$PGV_URL"
