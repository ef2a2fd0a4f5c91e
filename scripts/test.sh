#!/usr/bin/env bash
# Lint, type-check and run every test against a real Neo4j. Starts the managed server when none
# is configured and stops it again afterwards (also when tests fail); a server that was already
# running is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

"$BIN/ruff" check memtrace tests benchmarks
"$BIN/ruff" format --check memtrace tests benchmarks
"$BIN/mypy"

started_here=0
if [ -z "${NEO4J_URI:-}" ]; then
  "$BIN/memtrace" neo4j install
  if ! "$BIN/memtrace" neo4j status --json | grep -q '"running": true'; then
    "$BIN/memtrace" neo4j start
    started_here=1
  fi
fi
stop_server() {
  if [ "$started_here" = 1 ]; then "$BIN/memtrace" neo4j stop; fi
}
trap stop_server EXIT

# Integration tests must run, not skip, here: a missing server is a failure.
MEMTRACE_REQUIRE_NEO4J=1 "$BIN/pytest" "$@"
# mem0ai 2.x lives in a second virtualenv (`make venv-mem0v2`): its tests run there; under CI a
# missing one is a failure, not a skip.
MEM0V2=.venv-mem0v2/bin
if [ -x "$MEM0V2/pytest" ]; then
  MEMTRACE_REQUIRE_NEO4J=1 "$MEM0V2/pytest" tests/integration/test_mem0_lib_v2.py \
    tests/integration/test_mem0_lib_v2_replay.py
elif [ "${CI:-}" = true ]; then
  echo "no $MEM0V2/pytest: run 'make venv-mem0v2' (the mem0ai 2.x tests)" >&2
  exit 1
fi
