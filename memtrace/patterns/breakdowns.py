"""Pure breakdowns of one run: by question category, by where the evidence sits, the funnel,
and the comparison of two runs' failure classes. DataFrame in, DataFrame out."""

from __future__ import annotations

import numpy as np
import pandas as pd

FAILED_ATTRIBUTION = "attribution failed"

# The age of the evidence at question time: messages recorded between the evidence message and
# the question. Its buckets follow the run's ages (a fixed 0-49 bucket held every age of a short
# conversation, so the table said nothing): boundaries near the quantiles, at readable numbers,
# the same for every system of the run so that rows compare.
MAX_AGE_BUCKETS = 5


def _magnitude(value: float) -> int:
    """The power of ten of ``value``'s leading digit (``value`` >= 1): 37 -> 10."""
    return int(10 ** (len(str(int(value))) - 1))


def _series_1_2_5(value: float) -> tuple[int, int]:
    """The numbers of 1, 2, 5, 10, 20, 50, ... just below (or at) and just above ``value``."""
    magnitude = _magnitude(value)
    steps = [m * magnitude for m in (1, 2, 5, 10)]
    below = max(b for b in steps if b <= value)
    return below, steps[steps.index(below) + 1]


def _down_1_2_5(value: float) -> int:
    return _series_1_2_5(value)[0]


def _nearest_1_2_5(value: float) -> int:
    below, above = _series_1_2_5(value)
    return below if value - below <= above - value else above


def _down_one_digit(value: float) -> int:
    """``value`` rounded down to one significant digit: 37 -> 30, 430 -> 400."""
    magnitude = _magnitude(value)
    return int(value) // magnitude * magnitude


# Readable boundaries: 1, 2, 5 x 10^k (to the nearest, or down); one significant digit only
# where those leave a single bucket (ages all between two of them, e.g. 31 to 44).
ROUNDINGS = ((_nearest_1_2_5, _down_1_2_5), (_down_one_digit,))


def age_bins(ages: pd.Series, max_buckets: int = MAX_AGE_BUCKETS) -> tuple[int, ...]:
    """The lower bounds of the age buckets for these ages, the first one 0.

    Boundaries sit at the ages' quantiles (equal shares of evidence) rounded to readable numbers
    (``ROUNDINGS``): of the roundings tried together, the one whose largest bucket holds the
    least evidence, the earlier on a tie. Each boundary lies above the youngest age and at most
    at the oldest, so ages that differ get two buckets or more (when the quantiles fall
    together, the one boundary is the first readable number above the youngest age), one
    distinct age gets one bucket, and there are at most ``max_buckets``.
    """
    values = ages.dropna().astype(int).to_numpy()
    if values.size == 0 or values.min() == values.max():
        return (0,)
    low, high = int(values.min()), int(values.max())
    quantiles = [float(q) for q in np.quantile(values, np.arange(1, max_buckets) / max_buckets)]
    for roundings in ROUNDINGS:
        best: tuple[float, tuple[int, ...]] | None = None
        for rounding in roundings:
            rounded = (rounding(q) for q in quantiles if q >= 1)
            bounds = sorted({r for r in rounded if low < r <= high})
            if not bounds:
                continue
            buckets = np.searchsorted(bounds, values, side="right")
            largest = float(np.bincount(buckets).max() / values.size)
            if best is None or largest < best[0]:
                best = (largest, (0, *bounds))
        if best is not None:
            return best[1]
    magnitude = _magnitude(low) if low else 1
    above = (low // magnitude + 1) * magnitude
    return (0, above if above <= high else low + 1)


def age_bucket(messages_ago: int, bins: tuple[int, ...]) -> str:
    """The bucket's label: "0-9", "10-49", "50+"; a one-age bucket is just that age."""
    lower = max(b for b in bins if b <= messages_ago)
    later = [b for b in bins if b > lower]
    if not later:
        return f"{lower}+"
    upper = later[0] - 1
    return str(lower) if upper == lower else f"{lower}-{upper}"


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
    """Evidence messages and cases per (system, age bucket in messages, error type), youngest
    bucket first; the buckets (``age_bins``) come from every system's ages together."""
    if rows.empty:
        return _position(rows, "messages_ago", "age")
    ages = rows["messages_ago"].astype(int)
    bins = age_bins(ages)
    labels = {age: age_bucket(age, bins) for age in ages.unique().tolist()}  # once per age
    frame = rows.assign(age_bucket=ages.map(labels))
    result = _position(frame, "age_bucket", "age")
    order = {age_bucket(b, bins): i for i, b in enumerate(bins)}
    result["order"] = result["age"].map(order)
    result = result.sort_values(["system", "order", "error_type"]).drop(columns="order")
    return result.reset_index(drop=True)


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
    # a deletion step is shown under its own stage, next to its DeletionError (only stage
    # accuracy counts a deletion as an update: taxonomy.stage_of)
    merged["stage"] = merged["op_kind"]
    merged["order"] = merged["status"].map(STATUS_ORDER.index)
    merged["magnitude"] = merged["change"].abs()
    merged = merged.sort_values(
        ["order", "magnitude", "system", "op_name"], ascending=[True, False, True, True]
    )
    return merged.reset_index(drop=True)[COMPARE_COLUMNS]
