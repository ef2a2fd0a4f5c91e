"""Pattern tables as CSV and strict JSON, and back (lists travel as JSON arrays in CSV cells);
stored timestamps as people read them."""

from __future__ import annotations

import io
import json
import math
from datetime import UTC, datetime
from typing import Any

import pandas as pd


def _plain(value: Any) -> Any:
    """A JSON-safe Python value: NaN and missing become null, numpy scalars plain numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {str(key): _plain(value) for key, value in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def to_json(frame: pd.DataFrame) -> str:
    """Strict JSON (``allow_nan=False``): a list of row objects."""
    return json.dumps(records(frame), ensure_ascii=False, allow_nan=False, indent=2)


def from_json(text: str) -> pd.DataFrame:
    return pd.DataFrame(json.loads(text))


def to_csv(frame: pd.DataFrame) -> str:
    """CSV with list cells as JSON arrays and missing numbers as empty cells."""
    rows = records(frame)
    out = pd.DataFrame(
        [
            {
                k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v
                for k, v in r.items()
            }
            for r in rows
        ],
        columns=list(frame.columns),
    )
    buffer = io.StringIO()
    out.to_csv(buffer, index=False)
    return buffer.getvalue()


def from_csv(
    text: str, list_columns: tuple[str, ...], text_columns: tuple[str, ...] = ()
) -> pd.DataFrame:
    """Read ``to_csv`` output back; ``list_columns`` are parsed from their JSON arrays,
    ``text_columns`` keep an empty cell as an empty string (not a missing number)."""
    frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    for column in list_columns:
        frame[column] = frame[column].map(json.loads)
    for column in text_columns:
        frame[column] = frame[column].astype(object).fillna("").astype(str)
    return frame


def for_people(stamp: object) -> str:
    """A stored timestamp (ISO text, or nanoseconds since the epoch) as date, minutes, UTC."""
    if not stamp:
        return "-"
    if isinstance(stamp, int | float) and stamp == stamp:
        moment = datetime.fromtimestamp(stamp / 1e9 if stamp > 1e12 else stamp, UTC)
    else:
        try:
            moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            return str(stamp)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")
