#!/usr/bin/env bash
# AgentChat load kit — one command:
#   tests/load/run.sh            full benchmark (~5 min), writes tests/load/RESULTS.md (+ RESULTS.json)
#   tests/load/run.sh --smoke    CI smoke run (seconds): checks the kit works, not the speed
#   tests/load/run.sh --knowledge  knowledge scenarios on pgvector (~4 min), writes
#                                tests/load/RESULTS-knowledge.md (+ .json)
# Extra options are passed to `agentchat-load run` (see tests/load/README.md).
# The server binary: $AGENTCHAT_BIN, else target/release/agentchat, else target/debug/agentchat.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="$HERE/target"

# 5,000 open streams need ~15,000 descriptors across the generator, server and fake upstream
# (children inherit this limit).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 16384 ]; then
  ulimit -n 16384 2>/dev/null || echo "warning: open-files limit is $(ulimit -n); 5,000 streams may fail" >&2
fi

if [ -z "${AGENTCHAT_BIN:-}" ] && [ ! -x "$ROOT/target/release/agentchat" ] && [ ! -x "$ROOT/target/debug/agentchat" ]; then
  echo "no server binary: run 'cargo build --release -p agentchat' in $ROOT (or set AGENTCHAT_BIN)" >&2
  exit 1
fi

(cd "$HERE" && cargo build --release --quiet --offline 2>/dev/null || cargo build --release --quiet)
BIN="$CARGO_TARGET_DIR/release/agentchat-load"

SMOKE=0
RESULTS="$HERE/RESULTS.md"
for a in "$@"; do
  [ "$a" = "--smoke" ] && SMOKE=1
  # The knowledge scenarios' results have a file of their own.
  [ "$a" = "--knowledge" ] && RESULTS="$HERE/RESULTS-knowledge.md"
done
if [ "$SMOKE" = 1 ]; then
  exec "$BIN" run --command "$(echo "tests/load/run.sh $*" | sed "s/ *$//")" "$@"
else
  exec "$BIN" run --results-md "$RESULTS" --command "$(echo "tests/load/run.sh $*" | sed "s/ *$//")" "$@"
fi
