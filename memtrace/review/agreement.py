"""Agreement figures over human labels: each judge against the humans, reviewer against reviewer.

Pure: labels in (each reviewer's latest label of a case, with every run's attribution of that
case), DataFrames out. A judge is scored once per human label, as ``memtrace eval --labels human``
does; reviewers are compared on the cases both labelled, with Cohen's kappa.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import combinations

import pandas as pd

from memtrace.review.model import HumanLabel

JUDGE_COLUMNS = ("run_id", "judge", "label_type", "labels", "op_agreement", "type_agreement")
KAPPA_COLUMNS = (
    "reviewer_a", "reviewer_b", "shared_cases", "op_agreement", "type_agreement",
    "type_kappa", "label_kappa",
)  # fmt: skip


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels of the same items: (p_o - p_e) / (1 - p_e). NaN when
    chance agreement is certain (both raters used one and the same category throughout)."""
    if len(a) != len(b) or not a:
        raise ValueError("kappa needs two equally long, non-empty label sequences")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    if expected == 1.0:
        return float("nan")
    return (observed - expected) / (1.0 - expected)


def judge_agreement(labels: Sequence[HumanLabel]) -> pd.DataFrame:
    """Per run (judge) and human label type, and over all types ('(all)'): how many human labels
    the run attributed, and the share it blamed the same op / named the same type."""
    rows = []
    for label in labels:
        for attribution in label.attributions:
            rows.append(
                {
                    "run_id": attribution.get("run_id"),
                    "judge": attribution.get("judge"),
                    "label_type": label.error_type,
                    "op_ok": attribution.get("op_id") == label.op_id,
                    "type_ok": attribution.get("error_type") == label.error_type,
                }
            )
    if not rows:
        return pd.DataFrame(columns=list(JUDGE_COLUMNS))
    frame = pd.DataFrame(rows)
    frame["judge"] = frame["judge"].fillna("")
    overall = frame.assign(label_type="(all)")
    grouped = (
        pd.concat([frame, overall])
        .groupby(["run_id", "judge", "label_type"], sort=True)
        .agg(labels=("op_ok", "size"), op_agreement=("op_ok", "mean"),
             type_agreement=("type_ok", "mean"))
        .reset_index()
    )  # fmt: skip
    return grouped[list(JUDGE_COLUMNS)]


def reviewer_agreement(labels: Sequence[HumanLabel]) -> pd.DataFrame:
    """Per pair of reviewers who labelled a case in common: shared cases, raw agreement on the
    op and the type, kappa on the type and on the whole label (op and type)."""
    by_reviewer: dict[str, dict[tuple[str, str], HumanLabel]] = {}
    for label in labels:
        by_reviewer.setdefault(label.reviewer, {})[(label.trace_id, label.case_id)] = label
    rows = []
    for first, second in combinations(sorted(by_reviewer), 2):
        shared = sorted(by_reviewer[first].keys() & by_reviewer[second].keys())
        if not shared:
            continue
        a = [by_reviewer[first][ref] for ref in shared]
        b = [by_reviewer[second][ref] for ref in shared]
        rows.append(
            {
                "reviewer_a": first,
                "reviewer_b": second,
                "shared_cases": len(shared),
                "op_agreement": sum(x.op_id == y.op_id for x, y in zip(a, b, strict=True))
                / len(shared),
                "type_agreement": sum(
                    x.error_type == y.error_type for x, y in zip(a, b, strict=True)
                )
                / len(shared),
                "type_kappa": cohen_kappa([x.error_type for x in a], [y.error_type for y in b]),
                "label_kappa": cohen_kappa(
                    [(x.op_id, x.error_type) for x in a], [(y.op_id, y.error_type) for y in b]
                ),
            }
        )
    return pd.DataFrame(rows, columns=list(KAPPA_COLUMNS))
