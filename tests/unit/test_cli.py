import click
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
