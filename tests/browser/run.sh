#!/usr/bin/env bash
# Runs the browser tests against the already-built server binary (target/debug/agentchat, or
# $AGENTCHAT_BIN). Installs Debian's chromium if missing; never downloads a browser otherwise.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "chromium not found; installing Debian's package" >&2
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }
  else
    sudo apt-get install -y chromium
  fi
fi

BIN="${AGENTCHAT_BIN:-../../target/debug/agentchat}"
if [ ! -x "$BIN" ]; then
  echo "server binary not found at $BIN: build it first (cargo build -p agentchat) or set AGENTCHAT_BIN" >&2
  exit 2
fi

export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
npm test
