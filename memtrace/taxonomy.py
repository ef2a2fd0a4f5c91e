"""The one vocabulary every package speaks: error types, operation kinds, stages, format versions.

Attribution names an error type, loaders derive operation kinds, the systems plant faults of an
error type, evaluation compares stages, and failure classes are grouped by exactly these words.
Nothing here does I/O; every package may import it.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# The five memory error types (MemTrace's taxonomy), in pipeline order.
ErrorType = Literal[
    "ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"
]
ERROR_TYPES: Final[tuple[ErrorType, ...]] = get_args(ErrorType)

# Labels may also carry two annotation-only types; evaluation filters them out.
AnnotationOnlyType = Literal["AnnotationError", "LLMAsAJudgeError"]
LabelType = Literal[ErrorType, AnnotationOnlyType]  # one flat Literal: one clear message

# Where a label comes from, as `memtrace eval --labels` names it: `bench make` (its planted
# faults and the losses it derived from its own provenance), an executed counterfactual, a person
# in `memtrace review`, or a benchmark file's annotations (MemTraceBench). STORED_SOURCES: the
# `source` values of LABELED edges each one stands for.
LabelSource = Literal["planted", "replay", "human", "annotation"]
LABEL_SOURCES: Final[tuple[LabelSource, ...]] = get_args(LabelSource)
STORED_SOURCES: Final[dict[LabelSource, tuple[str, ...]]] = {
    "planted": ("injected", "derived"),
    "replay": ("replay",),
    "human": ("human",),
    "annotation": ("annotation",),
}
ANNOTATION_ONLY_TYPES: Final[tuple[AnnotationOnlyType, ...]] = get_args(AnnotationOnlyType)

# Failure modes: named refinements of an error type, kept beside it on a verdict so that
# failure classes show them apart. ``stale-memory``: the answer followed an older memory that
# the evidence (a newer message) contradicts, in a pipeline with no update step that could have
# superseded it (Mem0 2.x's additive extraction only adds). With both memories in the context
# it is an UpdateError at the extraction of the newer message (it added the new memory beside
# the old one instead of superseding it); when the newer one was never stored it stays the
# ExtractionError where it was lost, with this mode.
FailureMode = Literal["stale-memory"]
FAILURE_MODES: Final[tuple[FailureMode, ...]] = get_args(FailureMode)

# Normalized operation kinds (loaders/kinds.py derives them from names and categories).
Kind = Literal[
    "extraction", "update", "deletion", "embedding", "retrieval", "generation", "judge", "other"
]

# The error type an operation's kind implies when nothing more is known: embedding writes what
# extraction produced into the store, so a loss there is still a fact that never got stored.
DEFAULT_ERROR_TYPE: Final[dict[str, ErrorType]] = {
    "extraction": "ExtractionError",
    "update": "UpdateError",
    "deletion": "DeletionError",
    "embedding": "ExtractionError",
    "retrieval": "RetrievalError",
}


def default_error_type(kind: str) -> ErrorType:
    """The error type of a blamed op of this kind; ``ResponseError`` for the rest."""
    return DEFAULT_ERROR_TYPE.get(kind, "ResponseError")


# The op kind each error type blames (the inverse of DEFAULT_ERROR_TYPE, answer ops included).
ERROR_TYPE_KIND: Final[dict[ErrorType, Kind]] = {
    "ExtractionError": "extraction",
    "UpdateError": "update",
    "DeletionError": "deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "generation",
}


def type_fits_kind(label_type: str, kind: str | None) -> bool:
    """Whether a label of this type on an op of this kind is plausible without a second look:
    the kind's own type, the type's own kind, a non-memory label, or a kind nobody derived. A
    review asks once before it saves anything else (a RetrievalError on a generation op)."""
    if label_type in ANNOTATION_ONLY_TYPES or kind in (None, "other"):
        return True
    own_kind = next((k for t, k in ERROR_TYPE_KIND.items() if t == label_type), None)
    if own_kind is not None and stage_of(own_kind) == stage_of(kind):
        return True  # a deletion is an update: a DeletionError on an update op fits
    return default_error_type(kind) == label_type


def stage_of(kind: str) -> str:
    """The pipeline stage an op kind belongs to for stage accuracy: a deletion is an update."""
    return "update" if kind == "deletion" else kind


# An imported span's status (OpenTelemetry's status codes; OTLP writes them as 0 / 1 / 2 or as
# STATUS_CODE_UNSET / _OK / _ERROR): operations keep it as metadata otel_status.
SpanStatus = Literal["UNSET", "OK", "ERROR"]
SPAN_STATUSES: Final[tuple[SpanStatus, ...]] = get_args(SpanStatus)

# Native trace format: what the tracer writes, and every version the loader reads.
FORMAT_VERSION: Final = 2  # 2: an operation's edges inline in its record
FORMAT_VERSIONS: Final = (1, 2)


# Load states of a :Trace node. Readers only ever read `complete` traces. A re-load of a complete
# trace writes its new copy beside the old one under a reserved *staged* id and swaps the two in
# one transaction; the old copy then waits under a reserved *retired* id until it is deleted.
LoadState = Literal["loading", "complete", "staging", "retired"]
STAGED_PREFIX: Final = "memtrace:staged:"
RETIRED_PREFIX: Final = "memtrace:retired:"
RESERVED_PREFIXES: Final = (STAGED_PREFIX, RETIRED_PREFIX)


def staged_trace_id(trace_id: str) -> str:
    """The id a re-load of ``trace_id`` writes its new copy under until the swap."""
    return STAGED_PREFIX + trace_id


def retired_trace_id(trace_id: str) -> str:
    """The id the replaced copy of ``trace_id`` has between the swap and its deletion."""
    return RETIRED_PREFIX + trace_id


def is_reserved_trace_id(trace_id: str) -> bool:
    """True for ids of re-load copies, which no trace file may use."""
    return trace_id.startswith(RESERVED_PREFIXES)


# Datasets as memtrace names them (systems/locomo.py). Traces of other tools name them in their
# own spelling (MemBase: metadata.dataset_cls "LoCoMo"); the loader stores memtrace's name so that
# comparisons by dataset are not split by case. (Systems declare their names and other tools'
# spellings on their classes: systems/registry.py:SYSTEM_SPELLINGS, passed to the loader.)
DATASET_NAMES: Final = ("locomo",)


def dataset_name(name: str | None) -> str | None:
    """The registry's name of a known dataset (any case), else ``name`` unchanged."""
    if name is None:
        return None
    folded = name.strip().casefold()
    return next((known for known in DATASET_NAMES if known == folded), name)
