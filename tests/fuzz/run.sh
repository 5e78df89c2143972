#!/usr/bin/env bash
# Builds and runs the `cargo fuzz` targets in fuzz/ (libFuzzer) on the stable toolchain
# (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly-only flags). Installs cargo-fuzz from
# crates.io if missing.
#
#   tests/fuzz/run.sh --smoke                    # CI: every target for a few seconds
#   tests/fuzz/run.sh --seconds 3600             # the long run: an hour per target
#   tests/fuzz/run.sh --seconds 600 calculator   # one target
#
# Inputs start from the committed seeds (fuzz/seeds/TARGET) and what earlier runs found
# (fuzz/corpus/TARGET, not committed). A crash leaves its input in fuzz/artifacts/TARGET/;
# replay it with `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none TARGET fuzz/artifacts/TARGET/crash-...`.
# The last line is `FUZZ: PASS` or `FUZZ: FAIL (targets)`.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=5
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=5 ;;
    --seconds) seconds=$2; shift ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

# The same dependency versions as the server's build (cargo adds libfuzzer-sys on top).
cp Cargo.lock fuzz/Cargo.lock

# No sanitizer: the server crate forbids unsafe code, so ASan would find nothing the
# panics and assertions do not; builds and runs are much faster without it. The build lives
# outside the checkout so that a fresh clone (CI) reuses the instrumented dependencies: the
# first build of them takes many minutes on two cores.
target_dir="${AGENTCHAT_FUZZ_TARGET_DIR:-$HOME/.cache/agentchat/fuzz-target}"
mkdir -p "$target_dir"
FUZZ_FLAGS=(-s none --target-dir "$target_dir")
cargo fuzz build "${FUZZ_FLAGS[@]}"

failed=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
  echo "==> fuzz $t for ${seconds}s"
  if cargo fuzz run "${FUZZ_FLAGS[@]}" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
      -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"fuzz/$t.log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|Done )' "fuzz/$t.log" || true
  else
    failed+=("$t")
    tail -n 40 "fuzz/$t.log"
  fi
  rm -f "fuzz/$t.log"
done

if [ ${#failed[@]} -eq 0 ]; then
  echo "FUZZ: PASS"
else
  echo "FUZZ: FAIL (${failed[*]})"
  exit 1
fi
