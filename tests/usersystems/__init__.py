"""Small memory systems of the tests' own, traced with ``memtrace.tracing`` as docs/tracing.md
shows, written in styles unlike the reference systems' (issue 30). None of them uses
``memtrace.systems`` or memtrace's text helpers: each has its own few words of tokenizing.

Every system module has ``CONVERSATION`` / ``QUESTIONS`` (made-up conversations) and ``TRUTH``:
for each question the system gets wrong, the step that really broke it and the error type,
written down from how the system works before any judge ran on it. ``run(path, trace_id)``
traces one run into ``path`` and returns a ``Run``: which questions failed and the op id of
each step, so a test can turn ``TRUTH`` into (op id, error type) labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memtrace.tracing import current_operation


@dataclass
class Run:
    """What one traced run did: the failed question ids and each named step's op id."""

    failed: set[str] = field(default_factory=set)
    steps: dict[str, str] = field(default_factory=dict)  # step name -> op id
    predictions: dict[str, str] = field(default_factory=dict)

    def labels(self, truth: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
        """``truth`` (question -> (step, error type)) with each step replaced by its op id."""
        return {q: (self.steps[step], error_type) for q, (step, error_type) in truth.items()}


def mark(steps: dict[str, str], step: str) -> None:
    """Remember the current operation's id as ``step`` (for ``Run.labels``)."""
    op = current_operation()
    if op is not None:
        steps[step] = op.id
