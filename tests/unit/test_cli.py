from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memtrace.cli import COMMANDS, cli


def test_every_lazy_subcommand_resolves_to_a_command_of_that_name() -> None:
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command)
        assert command.name == name


def test_help_lists_every_subcommand_and_unknown_ones_are_refused() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output
    assert runner.invoke(cli, ["no-such-command"]).exit_code == 2


def test_piped_console_keeps_table_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a terminal rich would assume 80 columns and cut table cells to "sys…"."""
    from rich.table import Table

    from memtrace.cli.output import PIPE_WIDTH, make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    console = make_console()
    assert not console.is_terminal and console.width == PIPE_WIDTH
    table = Table(*[f"column_number_{i}" for i in range(9)])
    with console.capture() as captured:
        console.print(table)
    assert "column_number_8" in captured.get()

    monkeypatch.setenv("COLUMNS", "100")
    assert make_console().width == 100


def test_run_mem0_lib_without_an_endpoint_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMTRACE_HOME", str(tmp_path))
    # its own backend is the endpoint's (answer and judge): asked for first
    result = CliRunner().invoke(cli, ["run", "mem0-lib", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert "no LLM endpoint configured: set OPENAI_BASE_URL" in result.output
    offline = ["run", "mem0-lib", "--backend", "offline", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, offline)
    assert result.exit_code == 1
    assert "mem0-lib needs an OpenAI-compatible endpoint" in result.output
    assert not list((tmp_path / "out").glob("*.jsonl"))
