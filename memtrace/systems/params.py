"""Every tunable parameter of the reference systems, recorded as a `parameter` variable.

An operation reads exactly the parameters it uses, so attribution can blame a threshold and an
optimizer can change one (a changed value is a new version of the same variable).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from memtrace.tracing import Registered, current_operation


@dataclass(frozen=True, slots=True)
class Params:
    top_k: int = 10  # memories / chunks in the answer context
    similar_top_k: int = 3  # existing memories compared with each new fact
    none_threshold: float = 0.7  # similarity at which a fact is already stored
    update_threshold: float = 0.3  # similarity at which a fact is merged into a memory
    delete_threshold: float = 0.2  # similarity at which a negated fact deletes a memory
    max_merge_sentences: int = 4  # a memory this long is not merged into any more
    min_content_words: int = 2  # shorter sentences are not facts
    chunk_size: int = 8  # naive RAG: messages per chunk
    window: int = 120  # long-context: messages kept in the window
    judge_f1_threshold: float = 0.5  # offline judge: token F1 that counts as correct


def parameter(name: str) -> Registered:
    """The variable ``parameter:<name>``: registered once per trace, again when it changes."""
    return Registered(name, category="parameter", class_name="parameter")


_PARAMETERS = {field.name: parameter(field.name) for field in fields(Params)}


def use(params: Params, *names: str) -> None:
    """Register the named parameters (a changed value is a new version) and mark them read by
    the current operation."""
    if current_operation() is None:  # tracing off (or outside an operation): nothing to record
        return
    for name in names:
        handle = _PARAMETERS.get(name) or _PARAMETERS.setdefault(name, parameter(name))
        handle.read(getattr(params, name))
