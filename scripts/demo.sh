#!/usr/bin/env bash
# The README demo: a local Neo4j, then memtrace's main job on data it generates itself.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

"$BIN/memtrace" neo4j install
"$BIN/memtrace" neo4j start
"$BIN/memtrace" neo4j status
