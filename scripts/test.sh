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
