"""What a trace lacks that attribution depends on: one pass over the records the loaders read.

Pure: it sees the validated records of any input format (native, smartcomment, OTLP) one by one
(``TraceChecker.watch`` passes them through, so the loader's validation pass feeds it without a
second read of the file) and says, for each thing that will degrade attribution, what it costs
and how to fix it. The rules are the ones attribution applies (docs/attribution.md): the answer
op is an op of kind ``generation`` that reads the case's question (else one writing its
prediction); memories are variables of a category that a storing op (``extraction``,
``update``, ``embedding``) writes and a ``retrieval`` op reads or writes; only cases with a
score (``judge_score`` or ``failed``) are attributed; a case's evidence, else the ``message``
variables, is where its trails start.

Memory: a few entries per variable (its category and writer) and per case, no values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    TraceRecord,
    VariableRecord,
)
from memtrace.taxonomy import Kind

Level = Literal["error", "warning"]
EXAMPLES = 3  # ids named per finding
STORING: Final[frozenset[Kind]] = frozenset({"extraction", "update", "embedding"})
NOT_MEMORY = frozenset({"prompt"})  # prompts are read by retrieval ops but are no memory
# trace metadata a reader sets when an instrumentation wrote spans without the content it can
# record: [{"instrumentation": name, "spans": count, "how": what turns it on}]
CONTENT_OFF: Final = "content_off"
ANSWER_RULE = (
    "an operation whose name says answer / generate / respond / question-answering, or "
    "category='generation'"
)


@dataclass(frozen=True)
class Finding:
    """One thing that degrades attribution: what, how many, which (a few ids), and the fix."""

    code: str
    level: Level
    count: int
    problem: str
    fix: str
    examples: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "level": self.level,
            "count": self.count,
            "problem": self.problem,
            "fix": self.fix,
            "examples": list(self.examples),
        }


@dataclass(slots=True)
class _Case:
    id: str
    query: str
    prediction: str | None
    scored: bool
    gold: bool
    evidence: bool
    dangling: bool  # names evidence the trace does not hold (``missing_evidence``)


Ids = dict[str, None]  # a set of ids: a dict of strings alone is never walked by the GC


def _identity(record: VariableRecord) -> str:
    """(class_name, name) as one string."""
    return record.name if record.class_name is None else f"{record.class_name}\x1f{record.name}"


@dataclass
class TraceFacts:
    """What the checks read, gathered from the records.

    Only strings and integers in dicts, no tuples and no sets: Python's garbage collector then
    never walks them. With tuples and sets the checks added 8% to the validation pass's CPU,
    3% of it with the collector off (4 mem0 LoCoMo traces, load 24); now about 4%."""

    categories: dict[str, str | None] = field(default_factory=dict)  # variable id -> category
    # each identity's first version with a category, and that category
    first_version: dict[str, int] = field(default_factory=dict)
    first_category: dict[str, str] = field(default_factory=dict)
    # variables without a category: id -> identity, id -> version
    bare: dict[str, str] = field(default_factory=dict)
    bare_version: dict[str, int] = field(default_factory=dict)
    writers: dict[str, Kind] = field(default_factory=dict)  # variable id -> kind of a writer
    writer_names: dict[str, str] = field(default_factory=dict)  # variable id -> op name
    answer_reads: Ids = field(default_factory=dict)  # read by a generation op
    answer_writes: Ids = field(default_factory=dict)  # written by a generation op
    stored: Ids = field(default_factory=dict)  # written by a storing op
    served: Ids = field(default_factory=dict)  # read or written by a retrieval op
    sourced: Ids = field(default_factory=dict)  # the target of an edge (made from something)
    kinds: dict[Kind, int] = field(default_factory=dict)
    messages: int = 0
    cases: list[_Case] = field(default_factory=list)
    # records appended to a timeline: a request without a case is one of its messages, and
    # what earlier requests stored are memories (``TraceChecker.observe_earlier``)
    timeline: bool = False
    content_off: list[dict[str, object]] = field(default_factory=list)  # ``CONTENT_OFF``

    def memory_categories(self) -> set[str]:
        """Attribution's memory categories (``memories.cypher``)."""
        found = set()
        for var_id in self.stored.keys() & self.served.keys():
            category = self.categories.get(var_id)
            if category is not None and category not in NOT_MEMORY:
                found.add(category)
        return found

    def lost_category(self) -> dict[str, str]:
        """Variables without a category whose identity had one in an earlier version: id -> it."""
        lost = {}
        for var_id, key in self.bare.items():
            first = self.first_version.get(key)
            if first is not None and first < self.bare_version[var_id]:
                lost[var_id] = self.first_category[key]
        return lost


class TraceChecker:
    """Feed it a trace's records (``observe`` or ``watch``), then ask for ``findings()``."""

    def __init__(self, timeline: bool = False) -> None:
        self.facts = TraceFacts(timeline=timeline)
        self._names: dict[str, str] = {}  # one string object per op name
        self._kinds: dict[tuple[str, str | None], Kind] = {}  # ops repeat a few names

    def watch(self, records: Iterable[tuple[str, AnyRecord]]) -> Iterator[tuple[str, AnyRecord]]:
        """``records`` unchanged, each observed on the way."""
        for item in records:
            self.observe(item[1])
            yield item

    def observe(self, record: AnyRecord) -> None:
        facts = self.facts
        if isinstance(record, VariableRecord):
            self._variable(record)
        elif isinstance(record, OperationRecord):
            kind = record.kind or self._kind(record.name, record.category)
            facts.kinds[kind] = facts.kinds.get(kind, 0) + 1
            name = self._names.setdefault(record.name, record.name)
            for var_id in record.writes:
                if facts.writers.get(var_id) != "generation":  # an answer writer wins
                    facts.writers[var_id] = kind
                    facts.writer_names[var_id] = name
            if kind == "generation":
                facts.answer_reads.update(dict.fromkeys(record.reads))
                facts.answer_writes.update(dict.fromkeys(record.writes))
            elif kind == "retrieval":
                facts.served.update(dict.fromkeys(record.reads))
                facts.served.update(dict.fromkeys(record.writes))
            elif kind in STORING:
                facts.stored.update(dict.fromkeys(record.writes))
            for _, target in getattr(record, "edges", ()):  # format 2's inline edges
                facts.sourced[target] = None
        elif isinstance(record, EdgeRecord):
            facts.sourced[record.target] = None
        elif isinstance(record, TraceRecord):
            off = record.metadata.get(CONTENT_OFF)
            if isinstance(off, list):
                facts.content_off = [item for item in off if isinstance(item, dict)]
        elif isinstance(record, CaseRecord):
            facts.cases.append(
                _Case(
                    id=record.id,
                    query=record.query,
                    prediction=record.prediction,
                    scored=record.is_failed is not None,
                    gold=any(answer.strip() for answer in record.golden_answers),
                    evidence=bool(record.evidence),
                    dangling=bool(record.missing_evidence),
                )
            )

    def observe_earlier(self, var_id: str, category: str | None) -> None:
        """A variable of an earlier request of the timeline that these records read: a memory
        there was stored there (and served here, if a retrieval reads it), a message there is
        one to start a trail from."""
        facts = self.facts
        facts.categories[var_id] = category
        if category == "message":
            facts.messages += 1
        elif category == "memory_entry":
            facts.stored[var_id] = None
            facts.sourced[var_id] = None  # its producer is in the earlier request

    def _kind(self, name: str, category: str | None) -> Kind:
        kind = self._kinds.get((name, category))
        if kind is None:
            kind = self._kinds[name, category] = derive_kind(name, category)
        return kind

    def _variable(self, record: VariableRecord) -> None:
        facts = self.facts
        if record.is_marker:
            return
        category = record.category or None
        facts.categories[record.id] = category
        if category == "message":
            facts.messages += 1
        key = _identity(record)
        if category is None:
            facts.bare[record.id] = key
            facts.bare_version[record.id] = record.version
        else:
            first = facts.first_version.get(key)
            if first is None or record.version < first:
                facts.first_version[key] = record.version
                facts.first_category[key] = category

    def findings(self) -> list[Finding]:
        """Errors first, then warnings, each check in ``CHECKS`` order."""
        found = [finding for check in CHECKS for finding in check(self.facts)]
        return sorted(found, key=lambda finding: finding.level != "error")


def check_records(records: Iterable[AnyRecord]) -> list[Finding]:
    checker = TraceChecker()
    for record in records:
        checker.observe(record)
    return checker.findings()


# -- the checks: each reads the facts and returns its findings ------------------------------------


def _count(items: list[str], one: str, many: str) -> str:
    return f"{len(items)} {one if len(items) == 1 else many}"


def _examples(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(ids)[:EXAMPLES])


def no_cases(facts: TraceFacts) -> list[Finding]:
    if facts.cases or facts.timeline:  # a timeline's message requests ask nothing
        return []
    return [
        Finding(
            "no-cases",
            "warning",
            0,
            "the trace has no cases: attribution has no question to explain",
            "record each evaluated question with case(id=, query=, prediction=, "
            "golden_answers=, judge_score=, evidence=) (docs/tracing.md)",
        )
    ]


def unscored_cases(facts: TraceFacts) -> list[Finding]:
    unscored = [case.id for case in facts.cases if not case.scored]
    if not unscored:
        return []
    every = len(unscored) == len(facts.cases)
    return [
        Finding(
            "unscored-cases",
            "error" if every else "warning",
            len(unscored),
            f"{'every case' if every else f'{len(unscored)} of {len(facts.cases)} cases'} "
            "without judge_score or failed: attribution takes only failed cases, so these are "
            "neither attributed nor passed, only counted",
            "give each case judge_score= (0 = wrong) or failed=True/False",
            _examples(unscored),
        )
    ]


def answer_reads_question(facts: TraceFacts) -> list[Finding]:
    """Attribution's answer op: a generation op reading the question, else one writing the
    prediction (ambiguous: equal answers may share one variable across cases)."""
    unanswered: list[str] = []
    by_prediction: list[str] = []
    other_writers: set[str] = set()
    for case in facts.cases:
        if case.query in facts.answer_reads:
            continue
        if case.prediction is not None and case.prediction in facts.answer_writes:
            by_prediction.append(case.id)
            continue
        unanswered.append(case.id)
        if case.prediction is not None and case.prediction in facts.writer_names:
            kind = facts.writers[case.prediction]
            other_writers.add(f"{facts.writer_names[case.prediction]} (kind {kind})")
    found = []
    if unanswered:
        writers = (
            f"; the prediction is written by {', '.join(sorted(other_writers))}, not an answer "
            "operation"
            if other_writers
            else ""
        )
        found.append(
            Finding(
                "no-answer-operation",
                "error",
                len(unanswered),
                f"{_count(unanswered, 'case has', 'cases have')} no answer operation: no "
                "operation of kind generation reads the question or writes the prediction"
                f"{writers}. These cases cannot be attributed ('no answer operation reads its "
                "question')",
                _content_fix(facts)
                or "read(question) inside the operation that writes the answer, and make it "
                + ANSWER_RULE,
                _examples(unanswered),
            )
        )
    if by_prediction:
        found.append(
            Finding(
                "answer-does-not-read-question",
                "warning",
                len(by_prediction),
                f"{_count(by_prediction, 'case', 'cases')}: the answer operation does not read "
                "the question: it is found only through the prediction it writes, which is "
                "ambiguous when cases share a prediction variable (equal answers), and the "
                "question does not reach it",
                "read(question) inside the operation that writes the answer",
                _examples(by_prediction),
            )
        )
    return found


def content_not_captured(facts: TraceFacts) -> list[Finding]:
    """Spans an instrumentation wrote without their content: no trail starts or passes there,
    and what fixes it is the instrumentation's own switch, not how the app is traced."""
    found = []
    for off in facts.content_off:
        spans = int(str(off.get("spans", 0)))
        found.append(
            Finding(
                "content-not-captured",
                "error" if not facts.answer_reads and not facts.answer_writes else "warning",
                spans,
                f"{spans} {'span' if spans == 1 else 'spans'} written by "
                f"{off.get('instrumentation')} {'carries' if spans == 1 else 'carry'} no content "
                "(a model call without its messages or reply, a memory "
                "operation without its records): memtrace cannot see what they read or wrote, "
                "so no trail can start or pass there",
                f"turn content capture on: {off.get('how')}",
            )
        )
    return found


def _content_fix(facts: TraceFacts) -> str:
    """The fix of a finding caused by content an instrumentation left out, or ''."""
    if not facts.content_off:
        return ""
    return "the spans carry no content; turn content capture on: " + "; ".join(
        str(off.get("how")) for off in facts.content_off
    )


def retrieval_reads_question(facts: TraceFacts) -> list[Finding]:
    """A case's retrieval ops are those reading its question; else only the latest one the
    answer op depends on (up to three steps back) is taken (``case_anchor.cypher``)."""
    if "retrieval" not in facts.kinds:
        return []  # no_memories says what that costs
    unread = [case.id for case in facts.cases if case.query not in facts.served]
    if not unread:
        return []
    return [
        Finding(
            "retrieval-does-not-read-question",
            "warning",
            len(unread),
            f"{_count(unread, 'case', 'cases')}: no retrieval operation reads the question, so "
            "the case's search is guessed (the latest one the answer depends on); a retrieval "
            "miss may be blamed on another search, or on extraction",
            "read(question) inside the operation that searches for it",
            _examples(unread),
        )
    ]


def cases_without_gold(facts: TraceFacts) -> list[Finding]:
    missing = [case.id for case in facts.cases if not case.gold]
    if not missing:
        return []
    return [
        Finding(
            "no-gold-answer",
            "warning",
            len(missing),
            f"{len(missing)} of {len(facts.cases)} cases have no gold answer: the judge finds an "
            "evidence message's key sentence by the gold answer, so only the question's words "
            "are left to find it by",
            "case(golden_answers=['...'])",
            _examples(missing),
        )
    ]


def cases_without_evidence(facts: TraceFacts) -> list[Finding]:
    missing = [case.id for case in facts.cases if not case.evidence]
    if not missing:
        return []
    dangling = sum(case.dangling for case in facts.cases if not case.evidence)
    held = (
        "their request's messages, nor as the exact text of a message of an earlier request of "
        "the timeline"
        if facts.timeline
        else "the trace"
    )
    named = (
        f" ({dangling} of them name evidence not held by {held}: missing_evidence)"
        if dangling
        else ""
    )
    if facts.messages:
        return [
            Finding(
                "no-evidence",
                "warning",
                len(missing),
                f"{len(missing)} of {len(facts.cases)} cases have no evidence{named}: their trails "
                f"start from the {facts.messages} 'message' variables retrieved for question + "
                "gold answer, which may pick the wrong message",
                "case(evidence=[ids of the message variables that hold the answer])",
                _examples(missing),
            )
        ]
    return [
        Finding(
            "no-evidence",
            "error",
            len(missing),
            f"{len(missing)} of {len(facts.cases)} cases have no evidence{named} and the trace "
            "has no "
            "variable of category 'message' to retrieve it from: no trail can start, so every "
            "failure is blamed on the answer",
            "case(evidence=[ids of the message variables that hold the answer]), and "
            "category='message' on the conversation's messages",
            _examples(missing),
        )
    ]


def memories_without_category(facts: TraceFacts) -> list[Finding]:
    lost = facts.lost_category()  # reported by lost_categories
    bare = [var_id for var_id in facts.stored.keys() & facts.served.keys() if var_id in facts.bare]
    bare = [var_id for var_id in bare if var_id not in lost]
    if not bare:
        return []
    return [
        Finding(
            "memory-without-category",
            "error",
            len(bare),
            f"{_count(bare, 'variable is', 'variables are')} stored and then retrieved like "
            "memories but without a "
            "category: attribution finds memories by category, so a fact they hold is not seen "
            "as stored and its loss is blamed on extraction",
            "variable(..., category='memory') on every memory (any name, the same for all)",
            _examples(bare),
        )
    ]


def lost_categories(facts: TraceFacts) -> list[Finding]:
    memory = facts.memory_categories()
    lost: dict[bool, list[str]] = {True: [], False: []}
    was: dict[bool, set[str]] = {True: set(), False: set()}
    for var_id, category in facts.lost_category().items():
        is_memory = category in memory
        lost[is_memory].append(var_id)
        was[is_memory].add(category)
    found = []
    for is_memory in (True, False):
        ids = lost[is_memory]
        if not ids:
            continue
        categories = ", ".join(repr(category) for category in sorted(was[is_memory]))
        cost = (
            "a memory overwritten this way is no memory any more, so what it lost is blamed on "
            "extraction"
            if is_memory
            else "attribution reads variables by category"
        )
        found.append(
            Finding(
                "overwrite-lost-category",
                "error" if is_memory else "warning",
                len(ids),
                f"{_count(ids, 'variable is a new version', 'variables are new versions')} "
                "without the category an earlier "
                f"version had ({categories}): {cost}",
                "mutation(var, value) keeps the category; with variable(name, value) give "
                "category= again",
                _examples(ids),
            )
        )
    return found


def no_memories(facts: TraceFacts) -> list[Finding]:
    if not facts.cases or facts.memory_categories() or (facts.stored.keys() & facts.served.keys()):
        return []
    missing = [kind for kind in ("retrieval",) if kind not in facts.kinds]
    if not any(kind in facts.kinds for kind in STORING):
        missing.append("extraction / update / embedding")
    why = (
        f"no operation of kind {' or '.join(missing)}"
        if missing
        else "no variable is both written by a storing operation and read or written by a "
        "retrieval operation"
    )
    return [
        Finding(
            "no-memories",
            "warning",
            0,
            f"attribution sees no memory store ({why}): it cannot tell a retrieval miss, an "
            "overwrite or a deletion from a fact never extracted",
            "name operations by what they do (extract / update / add_to_vector_store or embed "
            "/ search or retrieve or recall), or give category='extraction' / 'update' / "
            "'embedding' / 'retrieval'; the retrieval op reads the memories it returns "
            "(docs/graph-model.md, kinds)",
        )
    ]


def memories_without_producer(facts: TraceFacts) -> list[Finding]:
    memory = facts.memory_categories()
    orphans = [
        var_id
        for var_id in facts.stored.keys() & facts.served.keys()
        if facts.categories.get(var_id) in memory and var_id not in facts.sourced
    ]
    if not orphans:
        return []
    return [
        Finding(
            "memory-without-producer",
            "warning",
            len(orphans),
            f"{_count(orphans, 'memory comes', 'memories come')} from nothing the trace "
            "shows (no edge into it): attribution cannot follow a memory back to the "
            "extraction output and the message it was made from, so it cannot tell which "
            "message's fact it holds",
            "variable(name, value, category='memory', sources=(facts,)) with the extraction "
            "output it is made from (docs/tracing.md, the SDK example)",
            _examples(orphans),
        )
    ]


CHECKS: Final[tuple[Callable[[TraceFacts], list[Finding]], ...]] = (
    no_cases,
    unscored_cases,
    content_not_captured,
    answer_reads_question,
    retrieval_reads_question,
    cases_without_gold,
    cases_without_evidence,
    memories_without_category,
    lost_categories,
    memories_without_producer,
    no_memories,
)
