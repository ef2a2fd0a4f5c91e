"""Under CI=true no test may skip: CI installs every extra (mem0ai 1.0.x here and 2.x in the
second virtualenv, sentence-transformers, the OTel extras, smartcomment, Chromium), so a skip
there hides a test that did not run. A skip of a test, or of a whole module at collection, fails
the run unless its node id (or its module's) is in ``ALLOWED_SKIPS`` with the reason.

A pytest plugin of its own (loaded by conftest.py) so that a test can run it on a scratch suite.
"""

from __future__ import annotations

import os

import pytest

# Node ids, or a module's path (all its tests), that may skip under CI=true -> why. Empty: CI
# provides everything every test needs. An entry needs a reason CI cannot do better than a skip.
ALLOWED_SKIPS: dict[str, str] = {}

_skipped: list[tuple[str, str]] = []


def _note(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or os.environ.get("CI") != "true":
        return
    if any(report.nodeid == ok or report.nodeid.startswith(f"{ok}::") for ok in ALLOWED_SKIPS):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    _skipped.append((report.nodeid, reason))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not hasattr(report, "wasxfail"):  # an expected failure is reported as a skip too
        _note(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note(report)  # pytest.skip(..., allow_module_level=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        terminalreporter.section("skipped under CI=true, not in ALLOWED_SKIPS: the run fails")
        for nodeid, reason in _skipped:
            terminalreporter.line(f"{nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
