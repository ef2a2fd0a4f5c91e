#!/usr/bin/env bash
# The README demo: a local Neo4j, then memtrace's main job on data it generates itself.
#   scripts/demo.sh [--system mem0|rag|long-context|evermemos]     (make demo SYSTEM=...)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${MEMTRACE_BIN:-.venv/bin}"  # .ci/run: a clean virtualenv holding the built wheel
OUT="${MEMTRACE_DEMO_DIR:-demo-traces}"
SYSTEM=mem0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --system) SYSTEM="${2:?--system needs a name}"; shift 2 ;;
    *) echo "usage: scripts/demo.sh [--system mem0|rag|long-context|evermemos]" >&2; exit 2 ;;
  esac
done

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "A real Neo4j 5.26 on 127.0.0.1"
"$BIN/memtrace" neo4j install
"$BIN/memtrace" neo4j start
"$BIN/memtrace" neo4j status

step "Trace the $SYSTEM memory system on the bundled sample, with 10 planted faults"
rm -rf "$OUT"
"$BIN/memtrace" bench make --system "$SYSTEM" --faults 10 --seed 1 --trace-prefix demo- --out "$OUT"

step "Load the traces into Neo4j"
"$BIN/memtrace" load "$OUT"
# The demo works on its own traces only: other traces in the database stay out of its run.
trace_ids=$("$BIN/memtrace" load "$OUT" --dry-run --json \
  | "$BIN/python" -c 'import json,sys; print(" ".join(f["trace_id"] for f in json.load(sys.stdin)["files"]))')

step "Attribute every failed case of the demo's traces (offline judge, no LLM needed)"
"$BIN/memtrace" db delete --run demo >/dev/null 2>&1 || true  # an earlier demo's run, if any
for trace_id in $trace_ids; do
  "$BIN/memtrace" attribute --trace "$trace_id" --judge offline --run-id demo
done

step "Score the verdicts against the planted labels"
"$BIN/memtrace" eval --run-id demo

# The first attributed case (the verdicts again, as JSON, without writing them).
first_case='
import json, sys
text, decoder, records = sys.stdin.read(), json.JSONDecoder(), []
while text.strip():
    found, end = decoder.raw_decode(text.strip())
    records += found
    text = text.strip()[end:]
print(records[0]["trace_id"], records[0]["case_id"])'
case_line=$(for trace_id in $trace_ids; do
  "$BIN/memtrace" attribute --trace "$trace_id" --judge offline --no-write --json
done | "$BIN/python" -c "$first_case")
read -r trace_id case_id <<<"$case_line"
step "Why did case $case_id fail?"
"$BIN/memtrace" explain "$case_id" --trace "$trace_id" --judge offline

step "Failure classes: which operation, error type and inputs fail most"
"$BIN/memtrace" patterns --run demo

step "Executed counterfactuals: re-run each failed case with operations repaired"
"$BIN/memtrace" db delete --run demo-replay >/dev/null 2>&1 || true
for trace_id in $trace_ids; do
  "$BIN/memtrace" attribute --trace "$trace_id" --judge replay --run-id demo-replay
done
"$BIN/memtrace" eval --run-id demo-replay --labels planted

step "What fixing each failure class would buy (each class repaired and replayed)"
"$BIN/memtrace" patterns --run demo --what-if

step "The diagnostic report (self-contained HTML + Markdown)"
"$BIN/memtrace" report --run demo --out demo-report

printf '\nOpen demo-report/report.html in any browser (it works offline).\n'
printf 'Explore the patterns in Neo4j Browser: memtrace browser --run demo (prints the URL, serves the guide)\n'
