"""Pure breakdowns of one run: by question category, by where the evidence sits, the funnel,
and the comparison of two runs' failure classes. DataFrame in, DataFrame out."""

from __future__ import annotations

import pandas as pd

from memtrace.taxonomy import stage_of

FAILED_ATTRIBUTION = "attribution failed"

# Age of the evidence at question time, in messages recorded in between.
AGE_BINS = (0, 50, 200, 500)


def age_bucket(messages_ago: int) -> str:
    lower = max(b for b in AGE_BINS if b <= messages_ago)
    later = [b for b in AGE_BINS if b > lower]
    return f"{lower}-{later[0] - 1}" if later else f"{lower}+"


def by_category(rows: pd.DataFrame) -> pd.DataFrame:
    """Cases per (system, question category, error type); a failed attribution is its own type,
    and each row's share is of its system and category."""
    frame = rows.assign(error_type=rows["error_type"].fillna(FAILED_ATTRIBUTION))
    frame["cases"] = frame["cases"].astype(int)
    totals = frame.groupby(["system", "category"])["cases"].transform("sum")
    frame["share_of_category"] = frame["cases"] / totals
    return frame.reset_index(drop=True)


def _position(rows: pd.DataFrame, column: str, key: str) -> pd.DataFrame:
    if rows.empty:
        return pd.DataFrame(columns=["system", key, "error_type", "cases", "evidence"])
    frame = rows.assign(error_type=rows["error_type"].fillna(FAILED_ATTRIBUTION))
    frame[key] = frame[column].astype("Int64") if column == "session_index" else frame[column]
    frame["case_key"] = list(zip(frame["trace_id"], frame["case_id"], strict=True))
    grouped = frame.groupby(["system", key, "error_type"], sort=True)
    result = grouped.agg(cases=("case_key", "nunique"), evidence=("evidence_id", "size"))
    return result.reset_index()


def by_session(rows: pd.DataFrame) -> pd.DataFrame:
    """Evidence messages and cases per (system, session index of the evidence, error type)."""
    return _position(rows, "session_index", "session_index")


def by_age(rows: pd.DataFrame) -> pd.DataFrame:
    """Evidence messages and cases per (system, age bucket in messages, error type)."""
    if rows.empty:
        return _position(rows, "messages_ago", "age")
    frame = rows.assign(age_bucket=rows["messages_ago"].astype(int).map(age_bucket))
    result = _position(frame, "age_bucket", "age")
    order = {age_bucket(b): i for i, b in enumerate(AGE_BINS)}
    result["order"] = result["age"].map(order)
    return result.sort_values(["system", "order", "error_type"]).drop(columns="order")


FUNNEL_STAGES = ("needed", "extracted", "survived", "retrieved", "in_context")


def funnel(rows: pd.DataFrame) -> pd.DataFrame:
    """The evidence-loss funnel in long form: system, stage, evidence, share of needed; then
    the evidence of cases whose attribution failed (stage ``unknown``, no share: it is outside
    the funnel, counted so that nothing is dropped)."""
    records: list[dict[str, object]] = []
    for row in rows.to_dict(orient="records"):
        needed = int(row["needed"])
        for stage in FUNNEL_STAGES:
            count = int(row[stage])
            share = count / needed if needed else 0.0
            records.append(
                {"system": row["system"], "stage": stage, "evidence": count, "share": share}
            )
        unknown = int(row["unknown"])
        records.append({"system": row["system"], "stage": "unknown", "evidence": unknown})
    return pd.DataFrame(records, columns=["system", "stage", "evidence", "share"])


COMPARE_KEY = ["system", "op_name", "op_kind", "error_type", "prompts", "parameters"]
COMPARE_COLUMNS = [
    "status",
    "system",
    "op_name",
    "op_kind",
    "error_type",
    "stage",
    "inputs_a",
    "inputs_b",
    "cases_a",
    "cases_b",
    "change",
]
STATUS_ORDER = ("appeared", "grew", "shrank", "vanished", "unchanged")


def _keyed(classes: pd.DataFrame) -> pd.DataFrame:
    """Classes summed over input versions: two system versions differ in versions, not names."""
    if classes.empty:
        return pd.DataFrame(columns=[*COMPARE_KEY, "cases", "inputs"])
    frame = classes.assign(
        prompts=classes["prompts"].map(tuple),
        parameters=classes["parameters"].map(tuple),
    )
    return (
        frame.groupby(COMPARE_KEY, sort=False)
        .agg(cases=("cases", "sum"), inputs=("inputs", lambda s: sorted({i for x in s for i in x})))
        .reset_index()
    )


def compare_classes(classes_a: pd.DataFrame, classes_b: pd.DataFrame) -> pd.DataFrame:
    """Classes that appeared, grew, shrank, vanished (or stayed) from run A to run B.

    Classes match on system, operation, error type and the *names* of the inputs read, so a new
    prompt version of the same operation compares with the old one.
    """
    merged = _keyed(classes_a).merge(
        _keyed(classes_b), on=COMPARE_KEY, how="outer", suffixes=("_a", "_b")
    )
    if merged.empty:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    merged["cases_a"] = merged["cases_a"].fillna(0).astype(int)
    merged["cases_b"] = merged["cases_b"].fillna(0).astype(int)
    merged["change"] = merged["cases_b"] - merged["cases_a"]
    for side in ("inputs_a", "inputs_b"):
        merged[side] = merged[side].map(lambda v: v if isinstance(v, list) else [])
    merged["status"] = [
        "appeared"
        if a == 0
        else "vanished"
        if b == 0
        else "grew"
        if b > a
        else "shrank"
        if b < a
        else "unchanged"
        for a, b in zip(merged["cases_a"], merged["cases_b"], strict=True)
    ]
    merged["stage"] = merged["op_kind"].map(stage_of)
    merged["order"] = merged["status"].map(STATUS_ORDER.index)
    merged["magnitude"] = merged["change"].abs()
    merged = merged.sort_values(
        ["order", "magnitude", "system", "op_name"], ascending=[True, False, True, True]
    )
    return merged.reset_index(drop=True)[COMPARE_COLUMNS]
