"""Pure evidence tracking: follow each evidence message's key sentence to where it stops.

Stages, in execution order (the error type follows from where the trail ends):

1. in the answer's context                         -> reached; the answer op is the suspect
2. held by a live memory when retrieval ran        -> RetrievalError at the retrieval op (of
                                                      several: the first that received it and
                                                      passed it on in no result)
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
from dataclasses import dataclass, replace

from memtrace.attribution.dates import unglue_dates, without_dates
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
from memtrace.attribution.text import memory_text
from memtrace.reading import LEXICAL, Reader, Reading
from memtrace.reading.keys import key_sentences
from memtrace.reading.lexical import (
    MIN_CONTENT_WORDS,
    containment,
    content_words,
    hold_threshold,
    holds,
    lines,
    sentences,
    word_forms,
)
from memtrace.taxonomy import ErrorType

# a stale memory is about what the question asks: it shares this many of its content words
# (one shared word is mostly the speaker's name)
STALE_TOPIC_WORDS = 2
ANSWER_PART_WORDS = 2  # gold-answer words a sentence must hold to carry part of the answer
STORING_KINDS = frozenset({"extraction", "update", "embedding", "deletion", "other"})
_LOSING_KIND_TYPES: dict[str, ErrorType] = {"update": "UpdateError", "deletion": "DeletionError"}


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


@dataclass(frozen=True)
class Sense:
    """How one sentence is read along its trail: the reader, and the gold-answer words the
    sentence carries (``Reader.read``'s ``needs``)."""

    sentence: str
    reader: Reader = LEXICAL
    needs: frozenset[str] = frozenset()

    @property
    def words(self) -> frozenset[str]:
        return content_words(self.sentence)

    def read(self, texts: Sequence[str | None]) -> Reading:
        return self.reader.read(self.sentence, texts, self.needs)

    def read_each(self, texts: Sequence[str]) -> list[Reading]:
        return self.reader.read_each(self.sentence, texts, self.needs)

    def holds(self, texts: Sequence[str | None]) -> bool:
        return self.read(texts).held


def _loss(
    memory: Memory, by_id: dict[str, Memory], sense: Sense, cutoff: int
) -> tuple[OpRef, ErrorType, str] | None:
    """How a memory version that held the sentence lost it before ``cutoff`` (None: it did not)."""
    if memory.deleted_by is not None and memory.deleted_by.seq < cutoff:
        return memory.deleted_by, "DeletionError", f"memory {memory.id} was deleted"
    if memory.next_id is not None and memory.next_seq is not None and memory.next_seq < cutoff:
        successor = by_id.get(memory.next_id)
        if successor is not None and _drops(sense, memory.value, successor.value):
            op = memory.next_creator or successor.creator
            if op is not None:
                return op, "UpdateError", f"{memory.id} was rewritten as {successor.id} without it"
    return None


def _drops(sense: Sense, before: str, after: str) -> bool:
    """Whether a rewrite from ``before`` to ``after`` lost the sentence.

    Also when a verbatim copy (every content word in one line) is rewritten into a version that
    only resembles it: the line still matching is another one (a long-context window keeps a
    later message with most of the same words, trimmed a session later).
    """
    words = sense.words
    kept = containment(words, after)
    if kept < hold_threshold(words):
        return not sense.holds([after])  # the words went; the meaning may not have
    return kept < 1.0 and containment(words, before) == 1.0


def off_path(graph: CaseGraph) -> frozenset[str]:
    """The ops of the evidence flow on a branch that never feeds the answer: their outputs flow
    on, within the flow followed, yet none reaches a variable the answer reads or a memory (a
    search may serve any memory): cognee's graph extraction, whose triplets go to the graph
    beside the summaries the answer reads. An op whose outputs flow nowhere is not on such a
    branch: an extraction that dropped everything writes an output nothing reads. Empty when
    nothing of the flow reaches the answer or a memory (a flow cut short by its depth, a system
    keeping no memory the graph knows): the path is not known."""
    ends = {variable for variable, _ in graph.context} | {m.id for m in graph.memories}
    sources: dict[str, set[str]] = {}
    outputs: dict[str, set[str]] = {}
    for step in graph.flow:
        sources.setdefault(step.target_id, set()).add(step.source_id)
        outputs.setdefault(step.op.id, set()).add(step.target_id)
    reaching, todo = set(ends), list(ends)
    while todo:
        for source in sources.get(todo.pop(), ()):
            if source not in reaching:
                reaching.add(source)
                todo.append(source)
    read = {step.source_id for step in graph.flow}
    if not any(written & reaching for written in outputs.values()):
        return frozenset()
    return frozenset(
        op for op, written in outputs.items() if written & read and not written & reaching
    )


def _on_path(ops: Sequence[OpRef], off: frozenset[str]) -> list[OpRef]:
    """``ops`` but those on a branch that never feeds the answer (``off_path``)."""
    return [op for op in ops if op.id not in off]


def _extraction_stop(
    steps: Sequence[FlowStep], sense: Sense, off: frozenset[str]
) -> tuple[OpRef | None, str]:
    """The op where a never-stored sentence left the flow, off no branch that never feeds the
    answer (``off_path``).

    The first extraction op whose outputs lack the sentence; else the first op that received a
    holder but passed none on; else the first op that read the message.
    """
    by_op: dict[str, list[FlowStep]] = {}
    for step in sorted(steps, key=lambda s: (s.op.seq, s.step)):
        by_op.setdefault(step.op.id, []).append(step)
    ops = _on_path([group[0].op for group in by_op.values()], off)
    holding = {s.target_id for s in steps if sense.holds([s.target_value])}
    for op in ops:
        outputs = [s.target_value for s in by_op[op.id]]
        if op.kind == "extraction" and not sense.holds(outputs):
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


def _retrieval_stop(
    graph: CaseGraph, evidence: Evidence, sense: Sense, live: Sequence[Memory]
) -> tuple[OpRef | None, str]:
    """The case's retrieval op that lost a stored sentence.

    Through several retrieval steps (an agentic search: round 1, sufficiency check, round 2,
    rerank) it is the first step that received a result holding the sentence and passed none
    on; when no step ever received one, the case's first retrieval op (the search missed it).
    """
    anchor = graph.anchor
    first = min(anchor.retrievals, key=lambda op: op.seq) if anchor.retrievals else None
    missed = f"stored in {live[0].id} but not in the retrieved context"
    case_ops = {op.id for op in anchor.retrievals}
    steps = [s for s in graph.flow if s.message_id == evidence.id and s.op.id in case_ops]
    holding = {m.id for m in live} | {s.target_id for s in steps if sense.holds([s.target_value])}
    by_op: dict[str, list[FlowStep]] = {}
    for step in sorted(steps, key=lambda s: (s.op.seq, s.step)):
        by_op.setdefault(step.op.id, []).append(step)
    for group in by_op.values():
        received = {s.source_id for s in group} & holding
        if received and not {s.target_id for s in group} & holding:
            op = group[0].op
            return op, f"{op.name or op.kind} received {sorted(received)[0]} holding it but " + (
                "passed no result holding it on"
            )
    return first, missed


def _reach(trail: Trail) -> tuple[int, int]:
    """How far a trail got: the context beats the store beats a loss; later losses beat earlier."""
    rank = {"context": 2, "stored": 1, "lost": 0}[trail.stage]
    return rank, trail.stop.seq if trail.stop is not None else 2**62


def trace_evidence(graph: CaseGraph, evidence: Evidence, reader: Reader = LEXICAL) -> Trail:
    """The trail of the message's key sentence (of the furthest-reaching one on a tie)."""
    anchor = graph.anchor
    options = key_sentences(evidence.text, anchor.question, anchor.golden_answers)
    needs = frozenset(answer_words(anchor))
    return max(
        (_trace_sentence(graph, evidence, Sense(s, reader, needs)) for s in options), key=_reach
    )


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


def _trace_sentence(graph: CaseGraph, evidence: Evidence, sense: Sense) -> Trail:
    sentence = sense.sentence
    seen = sense.read([value for _, value in graph.context])
    if seen.held:
        detail = _reached(graph, evidence, sense)
        return Trail(evidence.id, sentence, "context", None, None, detail, sure=seen.sure)
    cutoff = question_cutoff(graph)
    earlier = [m for m in graph.memories if m.seq < cutoff]
    read = sense.read_each([m.value for m in earlier])
    readings = {m.id: reading for m, reading in zip(earlier, read, strict=True)}
    holders = [m for m in graph.memories if m.id in readings and readings[m.id].held]
    live = [m for m in holders if _live(m, cutoff)]
    held = tuple(m.id for m in holders)
    if live:
        retrieval, detail = _retrieval_stop(graph, evidence, sense, live)
        sure = seen.sure and any(readings[m.id].sure for m in live)
        return Trail(
            evidence.id, sentence, "stored", retrieval, "RetrievalError", detail, held, sure=sure
        )
    # not stored, as far as the reader can tell: unsure while a memory is in its blind band
    sure = seen.sure and all(r.sure for r in readings.values())
    by_id = {m.id: m for m in graph.memories}
    # A loss before the message existed lost another message's copy of the sentence (a
    # long-context window trims an earlier message that said the same), not this one.
    losses = [
        loss
        for m in holders
        if (loss := _loss(m, by_id, sense, cutoff)) is not None and loss[0].seq > evidence.seq
    ]
    if losses:
        op, error_type, detail = min(losses, key=lambda loss: loss[0].seq)
        return Trail(evidence.id, sentence, "lost", op, error_type, detail, held, sure=sure)
    steps = [s for s in graph.flow if s.message_id == evidence.id]
    stop, why = _extraction_stop(steps, sense, off_path(graph))
    # an update decision that received the new fact and stored nothing holding it (a model
    # call whose decision a memory span applied, loaders/otlp/frameworks.py) lost it updating
    error_type = _LOSING_KIND_TYPES.get(stop.kind, "ExtractionError") if stop else "ExtractionError"
    return Trail(evidence.id, sentence, "lost", stop, error_type, why, held, sure=sure)


REACHED = "reached the answer's context"


def _reached(graph: CaseGraph, evidence: Evidence, sense: Sense) -> str:
    """How a sentence the context holds got there, as far as the trace shows: when this
    message's own extraction wrote nothing holding it, the context's copy came from another
    message (a similar note), and the reason says so rather than that this one reached it."""
    steps = [s for s in graph.flow if s.message_id == evidence.id]
    if any(sense.holds([s.target_value]) for s in steps):
        return REACHED
    extraction = next((s.op for s in steps if s.op.kind == "extraction"), None)
    if extraction is None:
        return REACHED
    return (
        f"is in the answer's context, but not from {evidence.id}: its extraction "
        f"{extraction.name or extraction.kind} {extraction.id} wrote nothing holding it (the "
        "context's copy came from another message)"
    )


def trace_all(graph: CaseGraph, reader: Reader = LEXICAL) -> list[Trail]:
    """Per evidence message: its key sentence's trail, then those of its other sentences that
    carry part of the gold answer. One of those counts as lost evidence (``needed``) only when
    it stopped before the context and holds a gold-answer word the context does not have."""
    anchor = graph.anchor
    words = answer_words(anchor)
    needs = frozenset(words)
    said = {w for _, value in graph.context for line in lines(value) for w in content_words(line)}
    traced: list[Trail] = []
    for evidence in graph.evidence:
        key = trace_evidence(graph, evidence, reader)
        traced.append(replace(key, answer_words=_held(key.key_sentence, words)))
        keys = key_sentences(evidence.text, anchor.question, anchor.golden_answers)
        for sentence in answer_sentences(evidence.text, words):
            if sentence in keys:
                continue
            trail = _trace_sentence(graph, evidence, Sense(sentence, reader, needs))
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


@dataclass(frozen=True)
class Stale:
    """An evidence trail whose case's answer followed an older memory that the evidence
    contradicts (taxonomy.py, failure mode ``stale-memory``)."""

    trail: Trail
    memory: Memory  # the stale memory the answer followed
    superseding: OpRef  # the op that added the newer memory beside it (or lost it)

    @property
    def reason(self) -> str:
        return (
            f"the answer followed {self.memory.id}, stored before {self.trail.message_id} and "
            f"contradicted by it; {self.superseding.name or self.superseding.kind} only added "
            "the newer memory beside it (no update step could supersede it)"
        )


def stale_memories(graph: CaseGraph, trails: Sequence[Trail]) -> list[Stale]:
    """Trails whose failed answer followed a stale memory.

    A memory is stale for an evidence message when it was stored before the message, was live
    and in the answer's context, is about what the question asks (at least
    ``STALE_TOPIC_WORDS`` of the question's content words), holds what the answer says beyond
    the question's words but not the gold answer nor the message's key sentence, and the
    message flowed into memory
    through an extraction with no update-kind op (an additive pipeline such as Mem0 2.x; where
    an update step exists, the classic types apply). Two shapes: the newer memory reached the
    context too (blamed: the extraction that added it) or it was never stored (the trail's
    ExtractionError, unchanged).
    """
    anchor = graph.anchor
    if not anchor.prediction or anchor.failed is False:
        return []
    asked = content_words(anchor.question)
    said = content_words(without_dates(anchor.prediction)) - asked
    gold = frozenset().union(*(content_words(a) for a in anchor.golden_answers))
    if not said:
        return []
    context = [value for _, value in graph.context]
    cutoff = question_cutoff(graph)
    seqs = {e.id: e.seq for e in graph.evidence}
    found: list[Stale] = []
    for trail in trails:
        additive = _additive_extraction(graph, trail.message_id)
        if additive is None or trail.role != "key":
            continue
        if trail.stage == "context":
            superseding = additive
        elif trail.stage == "lost" and trail.error_type == "ExtractionError" and trail.stop:
            superseding = trail.stop
        else:
            continue
        words = content_words(trail.key_sentence)
        stale = [
            m
            for m in graph.memories
            if m.seq < seqs.get(trail.message_id, 0)
            and _live(m, cutoff)
            and holds(said, [text := memory_text(m.value)])
            and len(content_words(text) & asked) >= STALE_TOPIC_WORDS
            and not (gold and holds(gold, [text]))
            and not holds(words, [text])
            and holds(content_words(text), context)
        ]
        if stale:
            found.append(Stale(trail, stale[0], superseding))
    return found


def _additive_extraction(graph: CaseGraph, message_id: str) -> OpRef | None:
    """The first extraction op the message flowed into, when no update-kind op is on its way."""
    steps = sorted((s for s in graph.flow if s.message_id == message_id), key=lambda s: s.op.seq)
    if any(s.op.kind == "update" for s in steps):
        return None
    return next((s.op for s in steps if s.op.kind == "extraction"), None)


# Roles from candidates.cypher that make an op a suspect by themselves; `trail` and `new_version`
# ops only moved or merged the evidence, and are suspects only where a trail stops.
SUSPECT_ROLES = frozenset({"reads_evidence", "deletes", "retrieval", "answer"})


def candidates(graph: CaseGraph, trails: Sequence[Trail]) -> list[Candidate]:
    """Ops that could be the earliest decisive fault, in execution order.

    From ``candidates.cypher``: the ops that read an evidence message, but those on a branch that
    never feeds the answer (``off_path``; the extraction ones, when there are any), ops deleting
    a trail variable, the case's retrieval op(s) and the answer op; plus every op where a lexical
    trail stops and every op that left a stale memory beside the newer one. Ops that only passed
    the evidence on are left out.
    """
    found: dict[str, tuple[OpRef, str, set[str]]] = {}

    def add(op: OpRef | None, role: str, message_id: str | None = None) -> None:
        if op is None:
            return
        entry = found.setdefault(op.id, (op, role, set()))
        if message_id:
            entry[2].add(message_id)

    # a reader on a branch that never feeds the answer is no suspect
    readers = _on_path(
        [op for op, role in graph.candidate_ops if role == "reads_evidence"], off_path(graph)
    )
    extractors = [op for op in readers if op.kind == "extraction"] or readers
    for op, role in graph.candidate_ops:
        if role in SUSPECT_ROLES and (role != "reads_evidence" or op in extractors):
            add(op, role)
    for trail in trails:
        if trail.needed:
            add(trail.stop, "trail end", trail.message_id)
    for stale in stale_memories(graph, trails):
        add(stale.superseding, "stale memory", stale.trail.message_id)
    for op in graph.anchor.retrievals:
        add(op, "retrieval")
    add(graph.anchor.answer, "answer")
    ordered = sorted(found.values(), key=lambda entry: entry[0].seq)
    return [Candidate(op, role, tuple(sorted(ids))) for op, role, ids in ordered]
