"""The record formats of a verdict: :Attribution properties and MemTrace-compatible JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from memtrace.attribution.model import Verdict


def attribution_rows(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """``$rows`` of ``write_attributions.cypher``: the verdict's non-null fields as properties."""
    rows = []
    for verdict in verdicts:
        props = asdict(verdict)
        props.pop("checked")
        props = {k: v for k, v in props.items() if v is not None}
        props["checked_ops"] = verdict.checked
        rows.append(
            {
                "trace_id": verdict.trace_id,
                "case_id": verdict.case_id,
                "op_id": verdict.op_id,
                "props": props,
            }
        )
    return rows


def memtrace_record(verdict: Verdict) -> dict[str, Any]:
    """The MemTrace-compatible output record of one case."""
    return {
        "trace_id": verdict.trace_id,
        "case_id": verdict.case_id,
        "error_attribution_result": {
            "error_type": verdict.error_type,
            "op_id": verdict.op_id,
            "reason": verdict.reason,
        },
        "judge": verdict.judge,
        "confidence": verdict.confidence,
        "llm_calls": verdict.llm_calls,
        "tokens_in": verdict.tokens_in,
        "tokens_out": verdict.tokens_out,
        "seconds": round(verdict.seconds, 4),
        **({"error": verdict.error} if verdict.error else {}),
        **({"failure_mode": verdict.failure_mode} if verdict.failure_mode else {}),
        **({"reading": verdict.reading} if verdict.reading else {}),
        **(
            {"replays": verdict.replays, "counterfactuals": json.loads(verdict.replay_outcomes)}
            if verdict.replay_outcomes
            else {}
        ),
        **(
            {
                "overridden_from": {
                    "op_id": verdict.overridden_from,
                    "error_type": verdict.overridden_type,
                }
            }
            if verdict.overridden_from
            else {}
        ),
    }
