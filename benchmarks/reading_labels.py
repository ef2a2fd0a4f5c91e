"""What each reading costs on real verbatim traces: the offline judge on the labeled smartcomment
files, read with every reader.

    .venv/bin/python benchmarks/reading_labels.py [--readings lexical meaning auto]

Loads the labeled smartcomment files (--shared, default ../shared/data/smartcomment) under
run-scoped trace ids, attributes every labeled case (`(:Case)-[:LABELED]->(:Operation)`) with
the offline judge (linear walk, gold evidence) once per reading (``memtrace.reading``), and
compares op and error type with the label. Prints, as JSON: per trace the share of its memories'
statements that copy a sentence of its messages (``reading.copying``: ``auto`` reads the others
by meaning); per reading the right cases, the reader each case was read with, and every miss.
Everything it loaded is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

from attribution import SHARED, labels, load  # the sibling benchmark: same loading and labels

from memtrace.admin import delete_trace
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.pipeline import Options, analyse_case
from memtrace.attribution.store import AttributionStore
from memtrace.attribution.text import memory_text
from memtrace.db import connect
from memtrace.reading import make_reader
from memtrace.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--readings", nargs="*", default=["lexical", "meaning", "auto"])
    args = parser.parse_args()
    scope = f"benchreading{uuid.uuid4().hex[:6]}"
    report: dict[str, Any] = {"scope": scope, "traces": {}}
    files = sorted(args.shared.glob("*.json"))
    traces = [f"{scope}-{path.stem}" for path in files]  # as `load` names them
    with connect(load_settings()) as db:
        try:
            load(db, files, scope)
            store = AttributionStore(db)
            for trace_id in traces:
                copying = store.copying(trace_id)
                memories = [memory_text(m.value) for m in store.memories(trace_id)]
                share = copying.share(memories) if copying else None
                report["traces"][trace_id] = {"statements_copying": share}
            cases = [(t, label) for t in traces for label in labels(db, t)]
            for name in args.readings:
                options = Options(reader=make_reader(name))
                right, read_with, misses = 0, set(), []
                for trace_id, label in cases:
                    verdict = analyse_case(
                        store, OfflineJudge(), trace_id, label["case_id"], options
                    ).verdict
                    read_with.add(verdict.reading)
                    if (verdict.op_id, verdict.error_type) == (label["op_id"], label["error_type"]):
                        right += 1
                    else:
                        misses.append(
                            f"{label['case_id']} {label['error_type']}: got {verdict.error_type} "
                            f"at {verdict.op_id} ({verdict.reason[:160]})"
                        )
                report[name] = {
                    "right": f"{right}/{len(cases)}",
                    "read_with": sorted(r for r in read_with if r),
                    "misses": misses,
                }
        finally:
            for trace_id in traces:
                delete_trace(db, trace_id)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
