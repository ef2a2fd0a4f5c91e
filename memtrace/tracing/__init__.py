"""Tracing SDK: record a memory system's operation-variable graph as a native trace.

    with trace("out/run.jsonl", "run-1", system="mem0"):
        with session("memory_construction"):
            with operation("memory_system.extract_facts") as op:
                msg = variable("msg-1", "I moved to Lisbon.", category="message")
                read(msg)
                facts = variable("facts-1", ["moved to Lisbon"], category="llm_response")
                edge(msg, facts)

See docs/tracing.md.
"""

from memtrace.tracing.api import (
    Registered,
    active,
    case,
    current_operation,
    delete,
    edge,
    edges,
    mutation,
    operation,
    read,
    session,
    trace,
    variable,
    write,
)
from memtrace.tracing.clock import Clock, SimClock, WallClock
from memtrace.tracing.tracer import OFF, OpState, Tracer, Var
from memtrace.tracing.writer import complete_prefix, wait_synced

__all__ = [
    "OFF",
    "Clock",
    "OpState",
    "Registered",
    "SimClock",
    "Tracer",
    "Var",
    "WallClock",
    "active",
    "case",
    "complete_prefix",
    "current_operation",
    "delete",
    "edge",
    "edges",
    "mutation",
    "operation",
    "read",
    "session",
    "trace",
    "variable",
    "wait_synced",
    "write",
]
