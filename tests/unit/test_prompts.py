"""Prompts as versioned data and the candidate configuration a file can hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtrace.attribution.llm_judge import CHECK_PROMPT, INTACT_PROMPT
from memtrace.cli import cli
from memtrace.errors import ConfigError, InputError
from memtrace.prompts import PROMPTS, Prompt, prompts_toml, read_prompts
from memtrace.systems.config import SystemConfig, read_config, read_params, write_config
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.params import RANGES, Params
from memtrace.systems.prompts import DEFAULTS, QUESTION_ANSWERING
from memtrace.systems.runner import run_system


def test_inputs_are_checked_when_a_prompt_is_built() -> None:
    Prompt("p", 1, "Q: {question} A: {gold}", inputs=("question", "gold"))
    with pytest.raises(ConfigError, match=r"missing \{gold\}"):
        Prompt("p", 1, "Q: {question}", inputs=("question", "gold"))
    with pytest.raises(ConfigError, match=r"unknown \{answer\}"):
        Prompt("p", 1, "{question} {answer}", inputs=("question",))
    with pytest.raises(ConfigError, match="empty text"):
        Prompt("p", 1, "  ")
    # a plain (system) prompt is sent as it is: literal JSON braces are fine
    assert Prompt("p", 1, 'Return {"facts": []}').format() == 'Return {"facts": []}'


def test_a_rewrite_is_the_next_version_and_keeps_the_inputs() -> None:
    revised = CHECK_PROMPT.revise(CHECK_PROMPT.text + "\nBe strict.")
    assert (revised.name, revised.version, revised.inputs) == (
        CHECK_PROMPT.name,
        CHECK_PROMPT.version + 1,
        CHECK_PROMPT.inputs,
    )
    assert revised.key == f"{CHECK_PROMPT.name}@{CHECK_PROMPT.version + 1}"
    assert CHECK_PROMPT.revise(CHECK_PROMPT.text) is CHECK_PROMPT
    with pytest.raises(ConfigError, match=r"missing \{view\}"):
        CHECK_PROMPT.revise("Question: {question} {gold} {prediction} {evidence} {role}")


def test_one_registry_holds_the_systems_and_the_judges_prompts() -> None:
    assert set(DEFAULTS) <= set(PROMPTS)
    assert {CHECK_PROMPT.name, INTACT_PROMPT.name} <= set(PROMPTS)
    with pytest.raises(ConfigError, match="unknown prompt 'nope'"):
        PROMPTS["nope"]
    with pytest.raises(ConfigError, match="registered twice"):
        PROMPTS.add(Prompt(QUESTION_ANSWERING, 1, "something else"))
    with pytest.raises(ConfigError, match="needs view"):
        INTACT_PROMPT.format(question="q", gold="g", evidence="e", role="r")


def test_config_files_round_trip_and_diff(tmp_path: Path) -> None:
    config = SystemConfig().with_prompts({QUESTION_ANSWERING: 'Answer "briefly".\n{not a field}'})
    config = config.with_params(top_k=4, none_threshold=0.55)
    write_config(config, tmp_path)
    back = read_config(tmp_path / "prompts.toml", tmp_path / "params.toml")
    assert back == config and back.key() == config.key()
    assert SystemConfig().diff(back) == {
        f"prompt:{QUESTION_ANSWERING}": (
            DEFAULTS[QUESTION_ANSWERING].text,
            'Answer "briefly".\n{not a field}',
        ),
        "parameter:top_k": (10, 4),
        "parameter:none_threshold": (0.7, 0.55),
    }
    assert back.prompts[QUESTION_ANSWERING].version == 2


def test_params_file_sets_only_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "params.toml"
    path.write_text("none_threshold = 1\ntop_k = 4\n")
    assert read_params(path) == Params(none_threshold=1.0, top_k=4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("top_k = 'ten'", r"params.toml:top_k: expected int"),
        ("nope = 1", r"params.toml:nope: unknown parameter"),
        ("top_k = true", r"params.toml:top_k: expected int"),
        ("top_k = ", r"params.toml: malformed TOML"),
    ],
)
def test_bad_params_file_names_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "params.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_params(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[nope]\ntext = "x"', r"prompts.toml:nope: unknown prompt"),
        ('["question-answering-prompt"]\nbody = "x"', r"expected a table with text"),
        ('["question-answering-prompt"]\ntext = "x"\nversion = "2"', r"expected an integer"),
        ('["question-answering-prompt"]\ntext = "  "', r"empty text"),
    ],
)
def test_bad_prompts_file_names_file_and_prompt(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prompts.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_prompts(path, DEFAULTS)


def test_search_ranges_name_real_parameters_and_hold_the_defaults() -> None:
    defaults = Params()
    for name, bounds in RANGES.items():
        assert bounds.low <= getattr(defaults, name) <= bounds.high, name
    assert "judge_f1_threshold" not in RANGES  # never let an optimizer loosen the judge


def test_run_takes_prompts_and_params_files_and_traces_the_new_versions(tmp_path: Path) -> None:
    qa = DEFAULTS[QUESTION_ANSWERING].revise("Answer in one word.")
    (tmp_path / "prompts.toml").write_text(prompts_toml([qa]))
    (tmp_path / "params.toml").write_text("top_k = 3\n")
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "run",
            "mem0",
            "--questions",
            "2",
            "--conversations",
            "1",
            "--deterministic",
            "--out",
            str(tmp_path / "out"),
            "--prompts",
            str(tmp_path / "prompts.toml"),
            "--params",
            str(tmp_path / "params.toml"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (trace,) = json.loads(result.output)["traces"]
    records = [json.loads(line) for line in Path(trace).read_text().splitlines()]
    variables = {(r["name"], r["version"]): r for r in records if r["type"] == "variable"}
    prompt = variables[(QUESTION_ANSWERING, 1)]
    assert prompt["value"] == "Answer in one word."
    assert prompt["metadata"] == {"prompt_version": 2}
    assert variables[("top_k", 1)]["value"] == "3"  # trace values are text

    (tmp_path / "params.toml").write_text("top_k = 'x'\n")
    bad = runner.invoke(
        cli,
        ["run", "mem0", "--out", str(tmp_path / "o2"), "--params", str(tmp_path / "params.toml")],
    )
    assert bad.exit_code == 1 and "params.toml:top_k: expected int" in bad.output
    assert not (tmp_path / "o2").exists()


def test_run_system_passes_prompts_and_params(tmp_path: Path) -> None:
    convs = load_locomo(SAMPLE_PATH, Subset(conversations=("1",), questions=3))
    base = run_system("mem0", convs, tmp_path / "a", deterministic=True)
    starved = run_system("mem0", convs, tmp_path / "b", deterministic=True, params=Params(top_k=1))
    assert base.traces[0].read_bytes() != starved.traces[0].read_bytes()
