"""Pure breakdowns of one run: by question category, by where the evidence sits, the funnel,
and the comparison of two runs' failure classes. DataFrame in, DataFrame out."""

from __future__ import annotations

import pandas as pd

from memtrace.taxonomy import stage_of

FAILED_ATTRIBUTION = "attribution failed"

# The age of the evidence at question time: messages recorded between the evidence message and
# the question. Its buckets follow the run's ages (a fixed 0-49 bucket held every age of a short
# conversation, so the table said nothing): boundaries at the quantiles, rounded down to readable
# numbers, the same for every system of the run so that rows compare.
MAX_AGE_BUCKETS = 5


def _magnitude(value: float) -> int:
    """The power of ten of ``value``'s leading digit (``value`` >= 1): 37 -> 10."""
    return int(10 ** (len(str(int(value))) - 1))


def _readable_1_2_5(value: float) -> int:
    """The largest of 1, 2, 5, 10, 20, 50, ... not above ``value`` (>= 1)."""
    magnitude = _magnitude(value)
    return max(m * magnitude for m in (1, 2, 5) if m * magnitude <= value)


def _readable_one_digit(value: float) -> int:
    """``value`` rounded down to one significant digit: 37 -> 30, 430 -> 400."""
    magnitude = _magnitude(value)
    return int(value) // magnitude * magnitude


def age_bins(ages: pd.Series, max_buckets: int = MAX_AGE_BUCKETS) -> tuple[int, ...]:
    """The lower bounds of the age buckets for these ages, the first one 0.

    Boundaries sit at the ages' quantiles (equal shares of evidence), rounded down to 1, 2, 5 x
    10^k, or to one significant digit when that leaves a single bucket. When the quantiles fall
    together (most ages equal, or all of them close), the one boundary is the first readable
    number above the youngest age. At most ``max_buckets`` buckets; each boundary lies above the
    youngest age and at most at the oldest, so ages that differ get two buckets or more, and one
    distinct age gets one.
    """
    values = ages.dropna().astype(int)
    if values.empty or values.min() == values.max():
        return (0,)
    low, high = int(values.min()), int(values.max())
    quantiles = values.quantile([i / max_buckets for i in range(1, max_buckets)]).tolist()
    for readable in (_readable_1_2_5, _readable_one_digit):
        inside = {readable(q) for q in quantiles if q >= 1} & set(range(low + 1, high + 1))
        if inside:
            return (0, *sorted(inside))
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
    bins = age_bins(rows["messages_ago"])
    frame = rows.assign(
        age_bucket=rows["messages_ago"].astype(int).map(lambda a: age_bucket(a, bins))
    )
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
    merged["stage"] = merged["op_kind"].map(stage_of)
    merged["order"] = merged["status"].map(STATUS_ORDER.index)
    merged["magnitude"] = merged["change"].abs()
    merged = merged.sort_values(
        ["order", "magnitude", "system", "op_name"], ascending=[True, False, True, True]
    )
    return merged.reset_index(drop=True)[COMPARE_COLUMNS]
