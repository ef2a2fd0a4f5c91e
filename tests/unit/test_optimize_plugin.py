"""The optimizer's system plugin: knobs, configurations, ids, loading, and the two baselines
on a system of the tests' own (household, tests/optsystems), offline (no database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from optsystems import household

from memtrace.cli import cli
from memtrace.errors import ConfigError
from memtrace.optimize import OptimizeOptions, run_optimization
from memtrace.optimize.plugin import (
    Knobs,
    ParameterKnob,
    PromptKnob,
    check_ids,
    knobs_of,
    load_spec,
    make_plugin,
    registered,
)
from memtrace.settings import load_settings

TRAIN, HELDOUT, TEST = ["h01", "h02", "h03", "h04"], ["h05", "h06", "h07", "h08"], ["h09", "h10"]


def test_knobs_check_what_a_configuration_may_hold() -> None:
    knobs = Knobs.of(
        [
            PromptKnob("answer", "Answer {question} from {notes}.", ("reply",), ("question",)),
            PromptKnob("judge", "Judge it.", tunable=False),
            ParameterKnob("top_k", 2, 1, 5, read_by=("lookup",)),
            ParameterKnob("threshold", 0.5),
        ],
        answer_op="reply",
    )
    assert knobs.movable("prompts") == ("answer",) and knobs.movable("parameters") == ("top_k",)
    assert knobs.answer("prompts") == ("answer",) and knobs.answer("parameters") == ()
    assert knobs.readers("parameters") == {"lookup": ("top_k",)}
    base = knobs.defaults()
    changed = base.with_params(top_k=4).with_prompts({"answer": "Say {question}."})
    assert base.diff(changed) == {
        "prompt:answer": ("Answer {question} from {notes}.", "Say {question}."),
        "parameter:top_k": (2, 4),
    }
    assert changed.key() != base.key() and base.with_params(top_k=2).key() == base.key()
    with pytest.raises(ConfigError, match="must keep \\{question\\}"):
        base.with_prompts({"answer": "Say it."})
    with pytest.raises(ConfigError, match="is an integer"):
        base.with_params(top_k=2.5)
    with pytest.raises(ConfigError, match="unknown parameter 'top_n'"):
        base.with_params(top_n=3)
    with pytest.raises(ConfigError, match="twice"):
        Knobs.of([ParameterKnob("x", 1), PromptKnob("x", "")])
    with pytest.raises(ConfigError, match="low 5 > high 1"):
        ParameterKnob("x", 1, 5, 1)
    with pytest.raises(ConfigError, match="int or a float"):
        ParameterKnob("x", True)


def test_ids_must_be_the_systems_and_in_one_split_only() -> None:
    system = household.HouseholdSystem()
    check_ids(system, {"train": TRAIN, "heldout": HELDOUT})
    with pytest.raises(ConfigError, match="--heldout: h99 not among the system's ids"):
        check_ids(system, {"train": TRAIN, "heldout": ["h99"]})
    with pytest.raises(ConfigError, match="h04 is in both train and test"):
        check_ids(system, {"train": TRAIN, "test": ["h04"]})


def test_a_system_is_found_by_spec_or_entry_point_with_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    system = make_plugin(load_spec("optsystems.household:make_system"), settings, "spec")
    assert system.name == "household" and len(knobs_of(system).movable("parameters")) == 4
    with pytest.raises(ConfigError, match=r"--system 'optsystems\.household': expected module"):
        load_spec("optsystems.household")
    with pytest.raises(ConfigError, match="has no 'nothing'"):
        load_spec("optsystems.household:nothing")
    with pytest.raises(ConfigError, match="bad: the system has no name, answer_op, knobs"):
        make_plugin(lambda _s: object(), settings, "bad")  # type: ignore[arg-type,return-value]
    assert registered("household") is None
    # an installed package of the user's: its metadata, as pip writes it, on the path
    info = tmp_path / "site" / "household-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: household\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[memtrace.systems]\nhousehold = optsystems.household:make_system\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    found = registered("household")
    assert found is not None and found(settings).name == "household"


def baseline(tmp_path: Path, **variant: object) -> object:
    options = OptimizeOptions(
        "household",
        "unit",
        rounds=6,
        trials=4,
        budget=48,
        seed=1,
        **variant,  # type: ignore[arg-type]
    )
    system = household.HouseholdSystem()
    return run_optimization(options, system, TRAIN, HELDOUT, tmp_path, db=None, test=TEST)


def test_answer_only_searches_the_answer_steps_knobs_unguided_every_knob(tmp_path: Path) -> None:
    only = baseline(tmp_path / "answer-only", guided=False, baseline="answer-only")
    assert all(r.targets == ["answer_words"] for r in only.rounds)  # type: ignore[attr-defined]
    assert set(only.base.diff(only.config)) <= {"parameter:answer_words"}  # type: ignore[attr-defined]
    # the glasses' drawer is the only failure the answer step can fix: 1 question in 5
    assert only.final["test"] <= only.initial["test"] + 0.2  # type: ignore[attr-defined]
    free = baseline(tmp_path / "unguided", guided=False)
    assert set(free.rounds[0].targets) == set(household.DEFAULTS)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="not guided"):
        OptimizeOptions("household", "x", baseline="answer-only")


def test_the_accepted_configuration_applied_by_the_users_code_gives_the_reported_accuracy(
    tmp_path: Path,
) -> None:
    result = baseline(tmp_path, guided=False)
    accepted = tmp_path / "accepted" / "household.json"
    assert json.loads(accepted.read_text()) == dict(result.config.params)  # type: ignore[attr-defined]
    assert household.evaluate(accepted, TEST) == result.final["test"]  # type: ignore[attr-defined]
    assert household.evaluate(accepted, HELDOUT) == result.final["heldout"]  # type: ignore[attr-defined]
    line = (tmp_path / "summary.txt").read_text()
    assert line.startswith("unit: changed parameter:") and "test 20.0% -> " in line


def test_the_cli_refuses_locomo_options_for_a_plugin_and_an_unknown_system() -> None:
    runner = CliRunner()
    base = ["optimize", "--train", "h01", "--heldout", "h02", "--out", "/nonexistent/x"]
    spec = ["--system", "optsystems.household:make_system"]
    result = runner.invoke(cli, [*base, *spec, "--questions", "3"])
    assert result.exit_code == 2 and "--questions is for memtrace's own systems" in result.output
    result = runner.invoke(cli, [*base, "no-such-system"])
    assert result.exit_code == 2 and "entry point group memtrace.systems" in result.output
    result = runner.invoke(cli, [*base, "mem0", *spec])
    assert result.exit_code == 2 and "name one system" in result.output
    result = runner.invoke(cli, [*base, *spec, "--unguided", "--baseline", "answer-only"])
    assert result.exit_code == 2 and "choose one" in result.output
