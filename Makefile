# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv demo test lint neo4j-start neo4j-stop

$(BIN)/memtrace: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,otel,mem0]'
	touch $@

venv: $(BIN)/memtrace

## Set up, start the local Neo4j and run the demo (SYSTEM=mem0|rag|long-context|evermemos).
SYSTEM ?= mem0
demo: venv
	bash scripts/demo.sh --system $(SYSTEM)

## Set up, start Neo4j, run lint, types and the whole test suite, stop Neo4j if we started it.
test: venv
	bash scripts/test.sh

lint: venv
	$(BIN)/ruff check memtrace tests benchmarks
	$(BIN)/ruff format --check memtrace tests benchmarks
	$(BIN)/mypy

neo4j-start: venv
	$(BIN)/memtrace neo4j install
	$(BIN)/memtrace neo4j start

neo4j-stop: venv
	$(BIN)/memtrace neo4j stop
