# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# mem0ai 2.x in a second virtualenv: the main one has 1.0.x (one environment holds one major)
VENV_MEM0V2 := .venv-mem0v2

.PHONY: venv venv-mem0v2 demo test lint neo4j-start neo4j-stop

$(BIN)/memtrace: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,otel,otel-capture,mem0-v1]'
	touch $@

venv: $(BIN)/memtrace

$(VENV_MEM0V2)/bin/memtrace: pyproject.toml
	$(PYTHON) -m venv $(VENV_MEM0V2)
	$(VENV_MEM0V2)/bin/pip install --quiet --upgrade pip
	$(VENV_MEM0V2)/bin/pip install --quiet -e '.[dev,otel,mem0]'
	touch $@

venv-mem0v2: $(VENV_MEM0V2)/bin/memtrace

## Set up, start the local Neo4j and run the demo (SYSTEM=mem0|rag|long-context|evermemos).
SYSTEM ?= mem0
demo: venv
	bash scripts/demo.sh --system $(SYSTEM)

## Set up, start Neo4j, run lint, types and the whole test suite (the mem0ai 2.x tests in the
## second virtualenv), stop Neo4j if we started it.
test: venv venv-mem0v2
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
