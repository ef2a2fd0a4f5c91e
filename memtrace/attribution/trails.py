"""Pure evidence tracking: follow each evidence message's key sentence to where it stops.

Stages, in execution order (the error type follows from where the trail ends):

1. in the answer's context                         -> reached; the answer op is the suspect
2. held by a live memory when retrieval ran        -> RetrievalError at the retrieval op
3. held by a memory that was later deleted          -> DeletionError at the deleting op
   or rewritten without it (or a verbatim copy      -> UpdateError at the op writing the new version
   into a mere resemblance), after the message existed
4. never held by any memory                         -> ExtractionError where the flow lost it

Each message's key sentence is followed, and so is every other sentence of it that holds a word
of the gold answer (an answer can take its parts from several sentences). Such a sentence counts
as lost evidence only when a gold-answer word it holds is nowhere in the answer's context: then
the answer step had no way to say it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memtrace.attribution.dates import unglue_dates
from memtrace.attribution.model import (
    Anchor,
    Candidate,
    CaseGraph,
    Evidence,
    FlowStep,
    Memory,
    OpRef,
    Trail,
)
from memtrace.attribution.text import (
    MIN_CONTENT_WORDS,
    containment,
    content_words,
    hold_threshold,
    holds,
    key_sentences,
    lines,
    sentences,
    word_forms,
)
from memtrace.taxonomy import ErrorType

ANSWER_PART_WORDS = 2  # gold-answer words a sentence must hold to carry part of the answer
STORING_KINDS = frozenset({"extraction", "update", "embedding", "deletion", "other"})


def question_cutoff(graph: CaseGraph) -> int:
    """The moment the store is looked at: the case's (first) retrieval, else the answer."""
    anchor = graph.anchor
    if anchor.retrievals:
        return min(op.seq for op in anchor.retrievals)
    return anchor.answer.seq if anchor.answer else 2**62


def _live(memory: Memory, cutoff: int) -> bool:
    if memory.seq >= cutoff:
        return False
    if memory.deleted_by is not None and memory.deleted_by.seq < cutoff:
        return False
    return memory.next_seq is None or memory.next_seq >= cutoff


def _loss(
    memory: Memory, by_id: dict[str, Memory], words: frozenset[str], cutoff: int
) -> tuple[OpRef, ErrorType, str] | None:
    """How a memory version that held the sentence lost it before ``cutoff`` (None: it did not)."""
    if memory.deleted_by is not None and memory.deleted_by.seq < cutoff:
        return memory.deleted_by, "DeletionError", f"memory {memory.id} was deleted"
    if memory.next_id is not None and memory.next_seq is not None and memory.next_seq < cutoff:
        successor = by_id.get(memory.next_id)
        if successor is not None and _drops(words, memory.value, successor.value):
            op = memory.next_creator or successor.creator
            if op is not None:
                return op, "UpdateError", f"{memory.id} was rewritten as {successor.id} without it"
    return None


def _drops(words: frozenset[str], before: str, after: str) -> bool:
    """Whether a rewrite from ``before`` to ``after`` lost the sentence.

    Also when a verbatim copy (every content word in one line) is rewritten into a version that
    only resembles it: the line still matching is another one (a long-context window keeps a
    later message with most of the same words, trimmed a session later).
    """
    kept = containment(words, after)
    return kept < hold_threshold(words) or (kept < 1.0 and containment(words, before) == 1.0)


def _extraction_stop(steps: Sequence[FlowStep], words: frozenset[str]) -> tuple[OpRef | None, str]:
    """The op where a never-stored sentence left the flow.

    The first extraction op whose outputs lack the sentence; else the first op that received a
    holder but passed none on; else the first op that read the message.
    """
    by_op: dict[str, list[FlowStep]] = {}
    for step in sorted(steps, key=lambda s: (s.op.seq, s.step)):
        by_op.setdefault(step.op.id, []).append(step)
    ops = [group[0].op for group in by_op.values()]
    holding = {s.target_id for s in steps if holds(words, [s.target_value])}
    for op in ops:
        outputs = [s.target_value for s in by_op[op.id]]
        if op.kind == "extraction" and not holds(words, outputs):
            return op, "the extraction output does not contain it"
    message_ids = {s.message_id for s in steps}
    for op in ops:
        inputs = {s.source_id for s in by_op[op.id]}
        got_it = bool(inputs & (holding | message_ids))
        if got_it and not {s.target_id for s in by_op[op.id]} & holding:
            return op, f"{op.name or op.kind} received it but wrote no output holding it"
    if ops:
        return ops[0], "no memory ever held it"
    return None, "no operation read the message"


def _reach(trail: Trail) -> tuple[int, int]:
    """How far a trail got: the context beats the store beats a loss; later losses beat earlier."""
    rank = {"context": 2, "stored": 1, "lost": 0}[trail.stage]
    return rank, trail.stop.seq if trail.stop is not None else 2**62


def trace_evidence(graph: CaseGraph, evidence: Evidence) -> Trail:
    """The trail of the message's key sentence (of the furthest-reaching one on a tie)."""
    anchor = graph.anchor
    options = key_sentences(evidence.text, anchor.question, anchor.golden_answers)
    return max((_trace_sentence(graph, evidence, s) for s in options), key=_reach)


def answer_words(anchor: Anchor) -> dict[str, str]:
    """The gold answer's content words the question does not already say (all of them when it
    says every one), stem -> the word as the answer writes it."""
    forms = word_forms(unglue_dates(" ".join(anchor.golden_answers)))
    asked = content_words(anchor.question)
    return {stem: word for stem, word in forms.items() if stem not in asked} or forms


def answer_sentences(text: str, words: dict[str, str]) -> list[str]:
    """The sentences of a message that carry part of the gold answer: at least
    ``ANSWER_PART_WORDS`` of its words (all of them when it has fewer). Questions are left out:
    they ask, they do not tell (and one shared word, "want", "week", matches by accident)."""
    needed = min(ANSWER_PART_WORDS, len(words))
    found = []
    for sentence in sentences(text):
        own = content_words(sentence)
        if sentence.endswith("?") or len(own) < MIN_CONTENT_WORDS:
            continue
        if needed and len(own & words.keys()) >= needed:
            found.append(sentence)
    return found


def _held(sentence: str, words: dict[str, str]) -> tuple[str, ...]:
    own = content_words(sentence)
    return tuple(word for stem, word in words.items() if stem in own)


def _trace_sentence(graph: CaseGraph, evidence: Evidence, sentence: str) -> Trail:
    anchor = graph.anchor
    words = content_words(sentence)
    if holds(words, (value for _, value in graph.context)):
        return Trail(evidence.id, sentence, "context", None, None, "reached the answer's context")
    cutoff = question_cutoff(graph)
    holders = [m for m in graph.memories if m.seq < cutoff and holds(words, [m.value])]
    live = [m for m in holders if _live(m, cutoff)]
    held = tuple(m.id for m in holders)
    if live:
        retrieval = min(anchor.retrievals, key=lambda op: op.seq) if anchor.retrievals else None
        detail = f"stored in {live[0].id} but not in the retrieved context"
        return Trail(evidence.id, sentence, "stored", retrieval, "RetrievalError", detail, held)
    by_id = {m.id: m for m in graph.memories}
    # A loss before the message existed lost another message's copy of the sentence (a
    # long-context window trims an earlier message that said the same), not this one.
    losses = [
        loss
        for m in holders
        if (loss := _loss(m, by_id, words, cutoff)) is not None and loss[0].seq > evidence.seq
    ]
    if losses:
        op, error_type, detail = min(losses, key=lambda loss: loss[0].seq)
        return Trail(evidence.id, sentence, "lost", op, error_type, detail, held)
    steps = [s for s in graph.flow if s.message_id == evidence.id]
    stop, why = _extraction_stop(steps, words)
    return Trail(evidence.id, sentence, "lost", stop, "ExtractionError", why, held)


def trace_all(graph: CaseGraph) -> list[Trail]:
    """Per evidence message: its key sentence's trail, then those of its other sentences that
    carry part of the gold answer. One of those counts as lost evidence (``needed``) only when
    it stopped before the context and holds a gold-answer word the context does not have."""
    anchor = graph.anchor
    words = answer_words(anchor)
    said = {w for _, value in graph.context for line in lines(value) for w in content_words(line)}
    traced: list[Trail] = []
    for evidence in graph.evidence:
        key = trace_evidence(graph, evidence)
        traced.append(replace(key, answer_words=_held(key.key_sentence, words)))
        keys = key_sentences(evidence.text, anchor.question, anchor.golden_answers)
        for sentence in answer_sentences(evidence.text, words):
            if sentence in keys:
                continue
            trail = _trace_sentence(graph, evidence, sentence)
            missing = (content_words(sentence) & words.keys()) - said
            traced.append(
                replace(
                    trail,
                    role="answer part",
                    answer_words=_held(sentence, words),
                    needed=trail.stage == "context" or bool(missing),
                )
            )
    return traced


# Roles from candidates.cypher that make an op a suspect by themselves; `trail` and `new_version`
# ops only moved or merged the evidence, and are suspects only where a trail stops.
SUSPECT_ROLES = frozenset({"reads_evidence", "deletes", "retrieval", "answer"})


def candidates(graph: CaseGraph, trails: Sequence[Trail]) -> list[Candidate]:
    """Ops that could be the earliest decisive fault, in execution order.

    From ``candidates.cypher``: the ops that read an evidence message (the extraction ones, when
    there are any), ops deleting a trail variable, the case's retrieval op(s) and the answer op;
    plus every op where a lexical trail stops. Ops that only passed the evidence on are left out.
    """
    found: dict[str, tuple[OpRef, str, set[str]]] = {}

    def add(op: OpRef | None, role: str, message_id: str | None = None) -> None:
        if op is None:
            return
        entry = found.setdefault(op.id, (op, role, set()))
        if message_id:
            entry[2].add(message_id)

    readers = [op for op, role in graph.candidate_ops if role == "reads_evidence"]
    extractors = [op for op in readers if op.kind == "extraction"] or readers
    for op, role in graph.candidate_ops:
        if role in SUSPECT_ROLES and (role != "reads_evidence" or op in extractors):
            add(op, role)
    for trail in trails:
        if trail.needed:
            add(trail.stop, "trail end", trail.message_id)
    for op in graph.anchor.retrievals:
        add(op, "retrieval")
    add(graph.anchor.answer, "answer")
    ordered = sorted(found.values(), key=lambda entry: entry[0].seq)
    return [Candidate(op, role, tuple(sorted(ids))) for op, role, ids in ordered]
