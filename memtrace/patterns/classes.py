"""Failure classes: the attributed failed cases of a run, grouped so that a team can fix a class.

Pure functions over the rows of ``cypher/patterns/failure_classes.cypher``: the query groups and
counts, this module adds the vocabulary (stage) and makes the types dependable for callers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import pandas as pd

CLASS_COLUMNS = (
    "system",
    "op_name",
    "op_kind",
    "error_type",
    "failure_mode",  # a named refinement of the error type (taxonomy.py), "" for none
    "stage",
    "inputs",
    "prompts",
    "parameters",
    "optimizable",
    "cases",
    "share_of_failures",
    "share_of_executions",
    "median_confidence",
    "example_cases",
    "case_ids",
    "trace_ids",
    # beyond the contract: what the shares are computed from
    "failures",
    "blamed_operations",
    "executions",
    "case_refs",  # [trace_id, case_id] of every case, by case id: case ids repeat across traces
)

# the columns holding lists (JSON arrays in CSV cells)
LIST_COLUMNS = (
    "inputs",
    "prompts",
    "parameters",
    "example_cases",
    "case_ids",
    "trace_ids",
    "case_refs",
)

# the text columns that may be empty (an empty CSV cell is read back as "")
TEXT_COLUMNS = ("failure_mode",)

EXAMPLES = 3


def class_key(row: Mapping[Hashable, object]) -> str:
    """A class's identity within a run: system / operation / error type / inputs read (two
    versions of a prompt make two classes, as ``failure_classes`` groups them)."""
    inputs = row.get("inputs")
    read = ",".join(map(str, inputs)) if isinstance(inputs, list) else ""
    return f"{row['system']}/{row['op_name']}/{row['error_type']}/{read}"


def _names(values: object) -> list[str]:
    return sorted({str(value) for value in values}) if isinstance(values, list) else []


def shape_classes(rows: pd.DataFrame) -> pd.DataFrame:
    """Query rows -> one row per class with the documented columns and types, most cases first."""
    if rows.empty:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in CLASS_COLUMNS})
    frame = pd.DataFrame(
        {
            "system": rows["system"].fillna("").astype(str),
            "op_name": rows["op_name"].fillna("").astype(str),
            "op_kind": rows["op_kind"].fillna("other").astype(str),
            "error_type": rows["error_type"].fillna("").astype(str),
        }
    )
    modes = rows["failure_mode"] if "failure_mode" in rows else pd.Series("", index=rows.index)
    frame["failure_mode"] = modes.fillna("").astype(str)
    # a deletion step is shown under its own stage, next to its DeletionError (only stage
    # accuracy counts a deletion as an update: taxonomy.stage_of)
    frame["stage"] = frame["op_kind"]
    frame["inputs"] = rows["inputs"].map(_names)
    frame["prompts"] = rows["prompts"].map(_names)
    frame["parameters"] = rows["parameters"].map(_names)
    frame["optimizable"] = frame["inputs"].map(bool)
    frame["cases"] = rows["cases"].astype(int)
    frame["share_of_failures"] = rows["share_of_failures"].astype(float)
    frame["share_of_executions"] = rows["share_of_executions"].astype(float)
    frame["median_confidence"] = pd.to_numeric(rows["median_confidence"]).astype(float)
    # case ids and traces come from case_refs: the query sends each case once
    refs = rows["case_refs"].map(lambda pairs: [(str(t), str(c)) for t, c in pairs])
    frame["case_ids"] = refs.map(lambda pairs: sorted(c for _, c in pairs))
    frame["example_cases"] = frame["case_ids"].map(lambda ids: ids[:EXAMPLES])
    frame["trace_ids"] = refs.map(lambda pairs: sorted({t for t, _ in pairs}))
    frame["case_refs"] = refs.map(
        lambda pairs: [[t, c] for t, c in sorted(pairs, key=lambda r: (r[1], r[0]))]
    )
    for column in ("failures", "blamed_operations", "executions"):
        frame[column] = rows[column].astype(int)
    frame = frame.sort_values(
        ["cases", "system", "op_name", "error_type", "failure_mode"],
        ascending=[False, True, True, True, True],
        kind="stable",
    )
    return frame.reset_index(drop=True)[list(CLASS_COLUMNS)]
