"""The CI skip guard (tests/ci_skips.py) on a scratch suite run by a pytest of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no such extra")

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    raise AssertionError
"""
MODULE_SKIP = 'import pytest\npytest.skip("needs mem0ai 9.x", allow_module_level=True)\n'


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str) -> pytest.RunResult:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    pytester.makepyfile(test_suite=SUITE, test_module_skip=MODULE_SKIP)
    return pytester.runpytest_subprocess("-p", "ci_skips")


def test_a_skip_under_ci_fails_the_run_and_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(pytester, monkeypatch, "true")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*skipped under CI=true*",
            "test_module_skip.py: *needs mem0ai 9.x",
            "test_suite.py::test_skips: *no such extra",
        ]
    )
    assert "test_expected_failure" not in result.stdout.str().split("skipped under CI")[1]


def test_outside_ci_a_skip_is_a_skip(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(pytester, monkeypatch, "")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)


def test_an_allowed_skip_passes_under_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(
        "import ci_skips\n"
        "ci_skips.ALLOWED_SKIPS.update({'test_suite.py::test_skips': 'why',"
        " 'test_module_skip.py': 'why'})\n"
    )
    result = run(pytester, monkeypatch, "true")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
