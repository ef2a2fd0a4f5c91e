"""Scoring attributions against labels: DataFrame in, DataFrames out (no I/O here).

Input rows (``eval_rows.cypher``): one per labeled case with the run's attribution, if any, the
case's answer op and ``flat_tokens``, the token estimate of the case's whole flattened trace.
Metrics follow MemTrace: exact match of the op id and of the error type. Stage accuracy matches
the blamed op's kind (deletion counted with update). Baselines on the same rows:
``baseline:answer-op`` always blames the answer op as ResponseError; ``baseline:whole-trace`` is
the cost of putting the whole flattened trace in one prompt (one call; accuracy not measured).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from memtrace.taxonomy import ERROR_TYPES, stage_of

CHARS_PER_TOKEN = 4  # the usual estimate for English text with an OpenAI tokenizer


@dataclass(frozen=True)
class Scores:
    summary: pd.DataFrame  # one row per method: cases, op/type/stage accuracy, cost per case
    by_type: pd.DataFrame  # per label type: cases, op and type accuracy
    confusion: pd.DataFrame  # label type x predicted type counts


def score(rows: pd.DataFrame) -> Scores:
    frame = rows.copy()
    answer_ops = frame["answer_op"]
    flat_tokens = frame["flat_tokens"]
    frame["op_ok"] = frame["attr_op"] == frame["label_op"]
    frame["type_ok"] = frame["error_type"] == frame["label_type"]
    attr_stage = frame["attr_kind"].astype(str).map(stage_of)
    frame["stage_ok"] = attr_stage == frame["label_kind"].astype(str).map(stage_of)
    baseline_op_ok = answer_ops == frame["label_op"]
    baseline_type_ok = frame["label_type"] == "ResponseError"
    n = len(frame)
    tokens = frame["tokens_in"].fillna(0) + frame["tokens_out"].fillna(0)
    summary = pd.DataFrame(
        [
            {
                "method": str(frame["judge"].dropna().iloc[0])
                if frame["judge"].notna().any()
                else "none",
                "cases": n,
                "attributed": int(frame["attr_op"].notna().sum()),
                "errored": int(frame["error"].notna().sum()),
                "op_accuracy": frame["op_ok"].mean() if n else 0.0,
                "type_accuracy": frame["type_ok"].mean() if n else 0.0,
                "stage_accuracy": frame["stage_ok"].mean() if n else 0.0,
                "llm_calls_median": frame["llm_calls"].fillna(0).median() if n else 0.0,
                "tokens_per_case": tokens.mean() if n else 0.0,
                "seconds_per_case": frame["seconds"].fillna(0).mean() if n else 0.0,
                "note": _run_note(frame),
            },
            {
                "method": "baseline:answer-op",
                "cases": n,
                "attributed": n,
                "errored": 0,
                "op_accuracy": baseline_op_ok.mean() if n else 0.0,
                "type_accuracy": baseline_type_ok.mean() if n else 0.0,
                "stage_accuracy": (frame["label_kind"] == "generation").mean() if n else 0.0,
                "llm_calls_median": 0.0,
                "tokens_per_case": 0.0,
                "seconds_per_case": 0.0,
                "note": "always blames the answer op as ResponseError",
            },
            {
                "method": "baseline:whole-trace",
                "cases": n,
                "attributed": 0,
                "errored": 0,
                "op_accuracy": float("nan"),
                "type_accuracy": float("nan"),
                "stage_accuracy": float("nan"),
                "llm_calls_median": 1.0,
                "tokens_per_case": flat_tokens.mean() if n else 0.0,
                "seconds_per_case": float("nan"),
                "note": "cost of one whole-trace prompt; accuracy not measured (no call made)",
            },
        ]
    )
    by_type = (
        frame.groupby("label_type")
        .agg(
            cases=("case_id", "size"),
            op_accuracy=("op_ok", "mean"),
            type_accuracy=("type_ok", "mean"),
        )
        .reset_index()
    )
    predicted = frame["error_type"].fillna("(none)")
    confusion = pd.crosstab(frame["label_type"], predicted).reindex(
        index=[t for t in ERROR_TYPES if t in set(frame["label_type"])],
        columns=[*ERROR_TYPES, "(none)"],
        fill_value=0,
    )
    confusion = confusion.loc[:, (confusion.sum(axis=0) > 0) | confusion.columns.isin(ERROR_TYPES)]
    return Scores(summary, by_type, confusion)


def _run_note(frame: pd.DataFrame) -> str:
    """Why some labelled cases have no attribution in the run, when they do not."""
    missing = int(frame["attr_op"].isna().sum())
    if not missing:
        return ""
    failed = int(frame["error"].notna().sum()) if "error" in frame else 0
    parts = [f"{failed} failed (see `memtrace attribute` output)"] if failed else []
    if missing - failed:
        parts.append(f"{missing - failed} not attributed in this run or blamed no operation")
    return "; ".join(parts)
