"""Shared fixtures. Integration tests use the real Neo4j that `make test` starts.

Locally, integration tests skip when no server answers; under MEMTRACE_REQUIRE_NEO4J=1 (set by
`make test` and CI) a missing server is an error instead, so they can never silently skip there.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memtrace.db import Database, connect
from memtrace.errors import Neo4jError
from memtrace.settings import load_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# Benchmark fixtures (synthetic traces) live beside the benchmarks, outside the package; the load
# tests reuse them, as the benchmarks import them when run as scripts.
sys.path.append(str(REPO_ROOT / "benchmarks"))

# Under CI=true a skip fails the run unless allowed (ci_skips.py, beside this file).
pytest_plugins = ["ci_skips"]


@pytest.fixture(scope="session")
def db() -> Iterator[Database]:
    try:
        with connect(load_settings()) as database:
            yield database
    except Neo4jError as exc:
        if os.environ.get("MEMTRACE_REQUIRE_NEO4J") == "1":
            pytest.fail(f"integration tests need Neo4j: {exc}")
        pytest.skip(f"no Neo4j server: {exc}")


@pytest.fixture
def run_id() -> str:
    """A unique id that scopes (and later cleans) everything one test writes."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        if os.environ.get("MEMTRACE_REQUIRE_NEO4J") == "1":
            pytest.fail(f"{SHARED_DATA} is missing")
        pytest.skip(f"{SHARED_DATA} is missing (it exists in CI)")
    return SHARED_DATA
