#!/usr/bin/env bash
# The README demo: a local Neo4j, then memtrace's main job on data it generates itself.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT="${MEMTRACE_DEMO_DIR:-demo-traces}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "A real Neo4j 5.26 on 127.0.0.1"
"$BIN/memtrace" neo4j install
"$BIN/memtrace" neo4j start
"$BIN/memtrace" neo4j status

step "Trace a mem0-style memory system on the bundled sample, with 10 planted faults"
rm -rf "$OUT"
"$BIN/memtrace" bench make --faults 10 --seed 1 --trace-prefix demo- --out "$OUT"

step "Load the traces into Neo4j"
"$BIN/memtrace" load "$OUT"

step "Attribute every failed case (offline judge, no LLM needed)"
"$BIN/memtrace" attribute --all-failed --judge offline --run-id demo

step "Score the verdicts against the planted labels"
"$BIN/memtrace" eval --run-id demo

case_line=$("$BIN/memtrace" attribute --all-failed --judge offline --run-id demo --no-write --json \
  | "$BIN/python" -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["trace_id"], r["case_id"])')
read -r trace_id case_id <<<"$case_line"
step "Why did case $case_id fail?"
"$BIN/memtrace" explain "$case_id" --trace "$trace_id" --judge offline

step "Failure classes: which operation, error type and inputs fail most"
"$BIN/memtrace" patterns --run demo

step "The diagnostic report (self-contained HTML + Markdown)"
"$BIN/memtrace" report --run demo --out demo-report

printf '\nOpen demo-report/report.html in any browser (it works offline).\n'
printf 'Explore the patterns in Neo4j Browser: memtrace browser --run demo (prints the URL, serves the guide)\n'
