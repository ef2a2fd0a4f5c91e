"""Synthetic native traces of any size (Mem0-shaped), for benchmarks and load tests."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_BASE_MS = 1_700_000_000_000


def _ts(ms: int) -> str:
    seconds, millis = divmod(_BASE_MS + ms, 1000)
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{millis:03d}"


def write_synthetic_trace(
    path: Path, trace_id: str, messages: int, questions_every: int = 20, seed: int = 7
) -> dict[str, int]:
    """Write a native trace with ``messages`` extract/update rounds and some questions.

    Returns the record counts (operations, variables, edges, cases, failed_cases, labels).
    """
    rng = random.Random(seed)
    counts = dict.fromkeys(("operations", "variables", "edges", "cases", "failed_cases"), 0)
    counts["labels"] = 0
    clock = 0
    memories: list[tuple[str, int]] = []  # (name, latest version)

    def emit(handle: Any, record: dict[str, Any]) -> None:
        handle.write(json.dumps(record, separators=(",", ":")))
        handle.write("\n")

    with path.open("w", encoding="utf-8") as out:
        emit(out, {"type": "trace", "format_version": 1, "id": trace_id, "system": "synthetic"})
        emit(out, {"type": "session", "id": "construction", "name": "memory_construction"})
        emit(out, {"type": "session", "id": "evaluation", "name": "memory_evaluation"})

        def variable(
            vid: str, name: str, version: int, category: str, value: str, **extra: Any
        ) -> None:
            nonlocal clock
            clock += 1
            emit(
                out,
                {
                    "type": "variable",
                    "id": vid,
                    "name": name,
                    "version": version,
                    "category": category,
                    "value": value,
                    "created_at": _ts(clock),
                    **extra,
                },
            )
            counts["variables"] += 1

        def operation(
            oid: str, name: str, session: str, reads: list[str], writes: list[str]
        ) -> None:
            nonlocal clock
            clock += 1
            emit(
                out,
                {
                    "type": "operation",
                    "id": oid,
                    "name": name,
                    "session": session,
                    "created_at": _ts(clock),
                    "reads": reads,
                    "writes": writes,
                },
            )
            counts["operations"] += 1
            for i, source in enumerate(reads):
                for target in writes[:1]:
                    emit(
                        out,
                        {
                            "type": "edge",
                            "id": f"{oid}-e{i}",
                            "op": oid,
                            "source": source,
                            "target": target,
                        },
                    )
                    counts["edges"] += 1

        variable("prompt@1", "fact-extraction-system-prompt", 1, "prompt", "Extract facts.")
        variable("marker@1", "delete_marker", 1, "marker", "DELETED", class_name="delete_marker")
        for m in range(messages):
            message = f"msg-{m}@1"
            variable(message, f"msg-{m}", 1, "message", f"speaker {m % 2}: message number {m} " * 3)
            facts = f"facts-{m}@1"
            operation(
                f"extract-{m}",
                "memory_system.extract_facts",
                "construction",
                [message, "prompt@1"],
                [facts],
            )
            variable(facts, f"facts-{m}", 1, "llm_response", f"fact {m}")
            roll = rng.random()
            if memories and roll < 0.2:
                slot = rng.randrange(len(memories))
                name, version = memories[slot]
                old = f"{name}@{version}"
                new = f"{name}@{version + 1}"
                operation(
                    f"update-{m}",
                    "memory_system.update_memory_decision",
                    "construction",
                    [facts, old],
                    [new],
                )
                variable(
                    new, name, version + 1, "memory_entry", f"memory {name} v{version + 1} fact {m}"
                )
                memories[slot] = (name, version + 1)
            elif memories and roll < 0.25:
                slot = rng.randrange(len(memories))
                name, version = memories.pop(slot)
                old = f"{name}@{version}"
                oid = f"update-{m}"
                operation(
                    oid,
                    "memory_system.update_memory_decision",
                    "construction",
                    [old, facts],
                    ["marker@1"],
                )
            else:
                name = f"mem-{m}"
                new = f"{name}@1"
                operation(
                    f"update-{m}",
                    "memory_system.update_memory_decision",
                    "construction",
                    [facts],
                    [new],
                )
                variable(new, name, 1, "memory_entry", f"memory {name} fact {m}")
                memories.append((name, 1))
            if m % questions_every == questions_every - 1 and memories:
                q = m // questions_every
                query = f"query-{q}@1"
                variable(
                    query, f"query-{q}", 1, "message & query", f"question {q}?", class_name="query"
                )
                hits = [f"{n}@{v}" for n, v in rng.sample(memories, min(3, len(memories)))]
                context = f"context-{q}@1"
                operation(
                    f"search-{q}",
                    "memory_system.search_vector_store",
                    "evaluation",
                    [query, *hits],
                    [context],
                )
                variable(context, f"context-{q}", 1, "memory_context", " | ".join(hits))
                prediction = f"prediction-{q}@1"
                operation(
                    f"answer-{q}",
                    "question-answering",
                    "evaluation",
                    [query, context],
                    [prediction],
                )
                variable(
                    prediction,
                    f"prediction-{q}",
                    1,
                    "llm_response",
                    f"answer {q}",
                    class_name="prediction",
                )
                failed = rng.random() < 0.3
                case: dict[str, Any] = {
                    "type": "case",
                    "id": f"case-{q}",
                    "query": query,
                    "prediction": prediction,
                    "golden_answers": [f"gold {q}"],
                    "judge_score": 0.0 if failed else 1.0,
                    "evidence": [f"msg-{m}@1"],
                }
                if failed:
                    case["labels"] = [
                        {
                            "op_id": f"answer-{q}",
                            "error_type": "ResponseError",
                            "source": "synthetic",
                        }
                    ]
                    counts["failed_cases"] += 1
                    counts["labels"] += 1
                emit(out, case)
                counts["cases"] += 1
    return counts
