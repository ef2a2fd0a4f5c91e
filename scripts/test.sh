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

# Under CI=true every optional part must be there, checked by version (tests/ci_skips.py also
# fails the run on any skip): mem0ai 1.0.x, sentence-transformers, the OTel extras and smartcomment
# here, mem0ai 2.x in the second virtualenv (`make venv-mem0v2`).
MEM0V2=.venv-mem0v2/bin
version_of() {  # version_of PYTHON DIST: the installed version, empty when missing
  "$1" -c 'import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass' "$2"
}
if [ "${CI:-}" = true ]; then
  missing=""
  case "$(version_of "$BIN/python" mem0ai)" in 1.0.*) ;; *) missing+=" mem0ai-1.0.x(.venv)" ;; esac
  for dist in sentence-transformers opentelemetry-sdk opentelemetry-instrumentation-openai \
    openinference-instrumentation-openai pydantic-ai-slim smartcomment; do
    [ -n "$(version_of "$BIN/python" "$dist")" ] || missing+=" $dist"
  done
  if [ -x "$MEM0V2/python" ]; then
    case "$(version_of "$MEM0V2/python" mem0ai)" in 2.*) ;; *) missing+=" mem0ai-2.x($MEM0V2)" ;; esac
    [ -n "$(version_of "$MEM0V2/python" opentelemetry-sdk)" ] || missing+=" opentelemetry-sdk($MEM0V2)"
  else
    missing+=" $MEM0V2"
  fi
  if [ -n "$missing" ]; then
    echo "CI needs every optional part; missing:$missing" >&2
    exit 1
  fi
fi

# A sample of the mutation tests (docs/testing.md): the executed label and the walks mutated,
# against the unit tests that pin their decisions. The whole run is a benchmark, outside CI.
# (Before pytest, so that pytest's summary closes the output.)
if [ "${CI:-}" = true ]; then
  "$BIN/python" benchmarks/mutation.py --sample --min-score 0.85 --timeout 240
fi

# Integration tests must run, not skip, here: a missing server is a failure. The mem0ai 2.x
# tests run in the second virtualenv, where mem0ai 2.x is (one environment holds one major).
MEMTRACE_REQUIRE_NEO4J=1 "$BIN/pytest" --ignore=tests/integration/test_mem0_lib_v2.py \
  --ignore=tests/integration/test_mem0_lib_v2_replay.py "$@"
if [ -x "$MEM0V2/pytest" ]; then
  MEMTRACE_REQUIRE_NEO4J=1 "$MEM0V2/pytest" tests/integration/test_mem0_lib_v2.py \
    tests/integration/test_mem0_lib_v2_replay.py
fi
