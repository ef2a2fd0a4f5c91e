"""`memtrace attribute --shard I/N`: every trace in exactly one shard, the same on every machine."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from memtrace.attribution.pipeline import Shard
from memtrace.cli import cli


def test_every_trace_falls_in_exactly_one_shard() -> None:
    traces = [f"otlp-{n:032x}" for n in range(200)] + ["run-a", "run-b", ""]
    shards = [Shard(i, 3) for i in (1, 2, 3)]
    for trace in traces:
        assert sum(shard.holds(trace) for shard in shards) == 1
    assert all(sum(shard.holds(t) for t in traces) > 40 for shard in shards)  # spread


def test_the_shard_of_a_trace_is_fixed_across_processes() -> None:
    # crc32("run-a") % 3 == 2: pinned, so a change of hash (which would re-split running
    # shards) is a visible break
    assert [Shard(i, 3).holds("run-a") for i in (1, 2, 3)] == [False, False, True]
    assert Shard(1, 1).holds("anything")


@pytest.mark.parametrize("value", ["0/2", "3/2", "1/0", "a/b", "2"])
def test_a_bad_shard_is_refused_before_anything_runs(value: str) -> None:
    result = CliRunner().invoke(cli, ["attribute", "--shard", value])
    assert result.exit_code == 2
    assert "--shard" in result.output
