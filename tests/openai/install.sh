#!/usr/bin/env bash
# Installs the official `openai` Python SDK (PyPI, pinned) into an ignored venv here, for the
# API tests that drive /v1/chat/completions with it (tests/api/openai_sdk.rs).
# Idempotent and quick when it is in place; .ci/run calls it, tests may too.
set -euo pipefail
cd "$(dirname "$0")"

OPENAI_VERSION=3.51.0

stamp=".installed-$OPENAI_VERSION"
if [ -f "$stamp" ] && [ -x .venv/bin/python ]; then
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check "openai==$OPENAI_VERSION"

rm -f .installed-*
touch "$stamp"
echo "openai SDK installed in tests/openai"
