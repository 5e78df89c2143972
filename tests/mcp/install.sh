#!/usr/bin/env bash
# Installs the real MCP servers the API tests talk to, into ignored directories here:
#   .venv/          PyPI: mcp-server-time (stdio) and the official `mcp` SDK (our own test server)
#   node_modules/   npm: @modelcontextprotocol/server-everything (Streamable HTTP)
# Idempotent and quick when everything is in place; .ci/run calls it, tests may too.
set -euo pipefail
cd "$(dirname "$0")"

MCP_SERVER_TIME_VERSION=2026.10.19
MCP_SDK_VERSION=2.3.0
SERVER_EVERYTHING_VERSION=2026.8.31

stamp=".installed-$MCP_SERVER_TIME_VERSION-$MCP_SDK_VERSION-$SERVER_EVERYTHING_VERSION"
if [ -f "$stamp" ] && [ -x .venv/bin/mcp-server-time ] && [ -d node_modules/@modelcontextprotocol/server-everything ]; then
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check \
  "mcp-server-time==$MCP_SERVER_TIME_VERSION" "mcp==$MCP_SDK_VERSION" "pyjwt[crypto]>=2.8,<3"

npm install --silent --no-audit --no-fund --no-save --prefix . \
  "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING_VERSION"

rm -f .installed-*
touch "$stamp"
echo "MCP test peers installed in tests/mcp"
