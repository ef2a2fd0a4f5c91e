"""EverMemOS-style: episodes cut out of the conversation by a boundary detector, agentic search.

Write path: each message goes into a buffer; a boundary detector decides whether the buffered
history ends an episode (force-split at hard limits). A finished MemCell gets an episode (title
+ narrative) and an event log (time + atomic facts), stored together as one memory unit that is
never updated or deleted. Read path: round 1 is hybrid retrieval (BM25 over the atomic facts
and embeddings by max similarity over them, fused by reciprocal rank); a sufficiency check reads
the top units; if they fall short, refined queries run hybrid retrieval again, their results are
fused, merged with round 1 and reranked against the question. The answer sees each unit's title
and episode.

Units carry the message sentences they came from (provenance), and each case records which
units every retrieval stage received and passed on, which is what fault injection and derived
labels follow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memtrace.errors import ConfigError
from memtrace.systems.base import System, evidence_facts, op_id, with_evidence
from memtrace.systems.core import (
    RERANK_ANCHOR,
    Backend,
    Fact,
    Item,
    Loss,
    Repaired,
    source_key,
)
from memtrace.systems.evermemos_steps import (
    Boundary,
    EpisodeSteps,
    OfflineEpisodeSteps,
    Said,
    Sufficiency,
)
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.params import use
from memtrace.systems.prompts import (
    EVERMEMOS_ANSWER,
    EVERMEMOS_BOUNDARY,
    EVERMEMOS_EPISODE,
    EVERMEMOS_EVENT_LOG,
    EVERMEMOS_REFINE,
    EVERMEMOS_SUFFICIENCY,
)
from memtrace.systems.rankers import BM25Ranker, Ranker, TrigramRanker
from memtrace.systems.temporal import parse_date
from memtrace.systems.text import sentences, words
from memtrace.tracing import OFF, Var, edge, mutation, operation, read, variable, write

T = TypeVar("T", int, str)


def _openai_steps(backend: Backend) -> EpisodeSteps:
    from memtrace.systems.evermemos_openai import OpenAIEpisodeSteps  # local: offline runs skip it

    return OpenAIEpisodeSteps(backend)


# The episode steps of each backend, by the backend's name.
STEPS: dict[str, Callable[[Backend], EpisodeSteps]] = {
    "offline": lambda _backend: OfflineEpisodeSteps(),
    "openai": _openai_steps,
}


@dataclass(slots=True)
class Unit:
    id: str
    title: str
    parts: tuple[Fact, ...]  # the episode, per message
    facts: tuple[Fact, ...]  # the event log's atomic facts
    time: str
    var: Var
    sources: frozenset[str] = frozenset()
    index_text: str = ""
    dense_texts: list[str] = field(default_factory=list)

    def value(self) -> list[str]:
        """The unit as stored and as retrieval results list it: a header, the episode and the
        event log, one sentence per line (attribution matches evidence line by line; a whole
        episode on one line would contain almost any sentence's words)."""
        return [
            f"{self.id}: {self.title} ({self.time})",
            *(p.text for p in self.parts),
            *(f"event log: {f.text}" for f in self.facts),
        ]

    def context(self) -> list[str]:
        """What the answer sees of the unit: its title and episode (not the event log)."""
        return [f"[{self.time}] {self.title}:", *(p.text for p in self.parts)]

    def line(self) -> str:
        """Title and episode in one text (what the sufficiency check and refinement read)."""
        return f"[{self.time}] {self.title}: {' '.join(p.text for p in self.parts)}"

    def __post_init__(self) -> None:
        episode = " ".join(p.text for p in self.parts)
        # BM25 indexes the atomic facts (EverMemOS: else subject x3, summary x2 and episode);
        # embeddings score each atomic fact (else the episode)
        self.index_text = (
            " ".join(f.text for f in self.facts)
            if self.facts
            else " ".join([self.title] * 3 + [episode[:200]] * 2 + [episode])
        )
        self.dense_texts = [f.text for f in self.facts] or [episode]


@dataclass(slots=True)
class Stage:
    """One retrieval step of a case: the units it received and the units it passed on."""

    op_id: str
    received: frozenset[str]
    passed: frozenset[str]


@dataclass(slots=True)
class Buffered:
    said: Said
    var: Var
    tokens: int = 0


@dataclass(slots=True)
class CaseSearch:
    stages: list[Stage] = field(default_factory=list)


class EverMemOSSystem(System):
    name = "evermemos"
    # a memory unit is never updated or deleted once written (online, without profiles)
    fault_types = ("ExtractionError", "RetrievalError", "ResponseError")
    parameters = (
        *System.parameters,
        "boundary_max_messages",
        "boundary_max_tokens",
        "boundary_overlap",
        "boundary_min_messages",
        "boundary_window",
        "boundary_min_words",
        "boundary_topic_overlap",
        "min_content_words",
        "top_k",
        "hybrid_candidates",
        "rrf_k",
        "agentic_rounds",
        "sufficiency_top",
        "sufficiency_threshold",
        "refined_queries",
        "final_rerank",
    )
    answer_prompt = EVERMEMOS_ANSWER

    def __init__(self, backend: Backend, **options: Any) -> None:
        super().__init__(backend, **options)
        if backend.name not in STEPS:
            raise ConfigError(
                f"evermemos has no episode steps for backend {backend.name!r} "
                f"(expected one of {', '.join(STEPS)})"
            )
        self.steps = STEPS[backend.name](backend)
        # The embeddings half: the chosen ranker, or the offline stand-in when that is BM25
        # (both halves would then be the same ranking).
        self.dense: Ranker = TrigramRanker() if self.ranker.name == "bm25" else self.ranker
        self.keyword = BM25Ranker()
        self.rerank_keyword = BM25Ranker()

    def reset(self) -> None:
        self.buffer: list[Buffered] = []
        self.buffer_var = OFF
        self.units: list[Unit] = []
        self.cells = 0
        self.holders: dict[str, set[str]] = {}  # source key -> units holding it
        self.dropped: dict[str, str] = {}  # source key -> the extract op that left it out
        self.gap = ""  # the time-gap label for the next message
        self.last_date = ""
        self.search = CaseSearch()
        self._sufficiency_var = OFF
        self.cell_repairs: list[str] = []  # repaired boundary steps the next MemCell answers to

    # -- construction -------------------------------------------------------------------
    def end_session(self, date: str) -> None:
        self.gap = "new session"
        self.last_date = date

    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        said = Said(turn.dia_id, turn.speaker, turn.text, date)
        gap = _gap(self.last_date, date) if self.gap else ""
        self.gap = ""
        if self.buffer and self.detect(said, message, gap).should_end:
            self.finalize(keep=self.params.boundary_overlap)
        with operation("memory_system.message_buffer_update", category="update"):
            self.step(f"buffer:{turn.dia_id}")  # keeps every message: nothing to repair
            read(message)
            self.buffer.append(Buffered(said, message, len(words(f"{turn.speaker}: {turn.text}"))))
            self._write_buffer()
            edge(message, self.buffer_var)

    def _write_buffer(self) -> None:
        lines = [b.said.line() for b in self.buffer]
        if self.buffer_var.id:
            self.buffer_var = mutation(self.buffer_var, lines, category="buffer")
        else:
            self.buffer_var = variable("message-buffer", lines, category="buffer")

    def detect(self, said: Said, message: Var, gap: str) -> Boundary:
        with operation("evermemos.boundary_detection", category="boundary_detection"):
            if self.step(f"boundary:{said.dia_id}"):  # repaired: the MemCell it shapes (the one
                self.cell_repairs.append(self.current_step)  # it closes, or its message joins)
            read(self.buffer_var, message)
            use(self.params, "boundary_max_messages", "boundary_max_tokens")
            history = [b.said for b in self.buffer]
            tokens = sum(b.tokens for b in self.buffer)
            if len(history) >= self.params.boundary_max_messages:
                decision = Boundary(True, f"hard limit: {len(history)} messages")
            elif tokens >= self.params.boundary_max_tokens:
                decision = Boundary(True, f"hard limit: {tokens} tokens")
            else:
                prompt = self.prompt(EVERMEMOS_BOUNDARY)
                use(
                    self.params,
                    "boundary_min_messages",
                    "boundary_window",
                    "boundary_min_words",
                    "boundary_topic_overlap",
                )
                decision = self.steps.boundary(prompt, history, said, gap, self.params)
            write(
                variable(
                    f"boundary:{said.dia_id}",
                    decision.as_json(),
                    category="llm_response",
                    class_name="boundary_decision",
                )
            )
            return decision

    def finish_construction(self) -> None:
        if self.buffer:
            self.finalize(keep=0)

    def finalize(self, keep: int) -> None:
        """Cut the buffer into a MemCell (keeping the last ``keep`` messages), then extract."""
        self.cells += 1
        cell_id = f"memcell-{self.cells:05d}"
        cell = list(self.buffer)
        with operation("memory_system.finalize_memory_unit", category="extraction"):
            if self.step(f"memcell:{cell_id}"):
                self.cell_repairs.append(self.current_step)
            repairs, self.cell_repairs = self.cell_repairs, []
            read(self.buffer_var)
            use(self.params, "boundary_overlap")
            cell_var = variable(
                cell_id,
                [b.said.line() for b in cell],
                category="memcell",
                sources=(self.buffer_var, *(b.var for b in cell)),
            )
            self.buffer = cell[len(cell) - keep :] if keep else []
            self._write_buffer()
        self.extract(cell_id, [b.said for b in cell], cell_var, repairs)

    def extract(self, cell_id: str, cell: list[Said], cell_var: Var, repairs: list[str]) -> None:
        """``repairs``: the repaired steps that shaped this MemCell (its boundary, its cut)."""
        with operation("memory_system.extract_memory", category="extraction"):
            if self.step(f"extract:{cell_id}"):
                repairs = [*repairs, self.current_step]
            read(cell_var)
            use(self.params, "min_content_words")
            episode = self.steps.episode(self.prompt(EVERMEMOS_EPISODE), cell, self.params)
            log = self.steps.event_log(self.prompt(EVERMEMOS_EVENT_LOG), cell, self.params)
            parts, facts = self._planted_extraction(cell, episode.parts, log.facts)
            if repairs:
                parts, facts = self._repair_extraction(cell, episode.parts, log.facts,
                                                       parts, facts, repairs)  # fmt: skip
            # one sentence per line, like the unit (see Unit.value)
            episode_var = variable(
                f"episode:{cell_id}",
                [f"title: {episode.title}", *(p.text for p in parts)],
                category="llm_response",
                class_name="episode",
                sources=(cell_var,),
            )
            log_var = variable(
                f"event_log:{cell_id}",
                [f"time: {log.time}", *(f.text for f in facts)],
                category="llm_response",
                class_name="event_log",
                sources=(cell_var,),
            )
            kept = frozenset(k for piece in (*parts, *facts) for k in piece.sources)
            for said in cell:
                self.run_state.fact_counts[said.dia_id] = sum(
                    1 for f in facts if any(k.startswith(f"{said.dia_id}#") for k in f.sources)
                )
                for i in range(max(1, len(sentences(said.text)))):
                    key = source_key(said.dia_id, i)
                    if key not in kept and not self.holders.get(key):
                        self.dropped.setdefault(key, op_id())
            unit_id = f"memory-unit-{len(self.units) + 1:05d}"
            unit = Unit(unit_id, episode.title, parts, facts, log.time, OFF, kept)
            unit.var = variable(
                unit_id, unit.value(), category="memory_entry", sources=(episode_var, log_var)
            )
        self.units.append(unit)
        for key in kept:
            self.holders.setdefault(key, set()).add(unit_id)
            self.dropped.pop(key, None)

    def _repair_extraction(
        self,
        cell: list[Said],
        made_parts: Sequence[Fact],
        made_facts: Sequence[Fact],
        parts: tuple[Fact, ...],
        facts: tuple[Fact, ...],
        repairs: list[str],
    ) -> tuple[tuple[Fact, ...], tuple[Fact, ...]]:
        """The oracle's episode and event log: both keep the evidence sentences of this
        MemCell's messages, the extractor's own pieces of them when something dropped those
        after it made them (a planted fault), else the sentences themselves (``evidence_facts``)."""
        wanted = {
            k for k in self.repair_sources() if k.rpartition("#")[0] in {s.dia_id for s in cell}
        }
        details = []
        for name, made, have in (("episode", made_parts, parts), ("event log", made_facts, facts)):
            restored = [p for p in made if p not in have and p.sources & wanted]
            kept = [p for p in made if p in have or p in restored]
            kept += [p for p in have if p not in made]
            held = {k for p in kept for k in p.sources}
            added = [
                fact
                for said in cell
                for fact in evidence_facts(
                    said.dia_id,
                    said.speaker,
                    said.text,
                    sorted(k for k in wanted - held if k.rpartition("#")[0] == said.dia_id),
                )
            ]
            if restored or added:
                details.append(f"{name}: restored {len(restored)}, added {len(added)} piece(s)")
            if name == "episode":
                parts = (*kept, *added)
            else:
                facts = (*kept, *added)
        if details:
            for step in repairs:
                self.run_state.repaired.append(
                    Repaired(step, op_id(), "; ".join(details), "ExtractionError")
                )
        return parts, facts

    def _planted_extraction(
        self, cell: list[Said], parts: Sequence[Fact], facts: Sequence[Fact]
    ) -> tuple[tuple[Fact, ...], tuple[Fact, ...]]:
        """An ExtractionError planted at a message of this cell: the episode and the event log
        both leave its evidence sentences out."""
        for said in cell:
            fault = self.fault("ExtractionError", said.dia_id)
            if fault is None:
                continue
            kept_parts = [p for p in parts if not p.sources & fault.sources]
            kept_facts = [f for f in facts if not f.sources & fault.sources]
            dropped = len(parts) - len(kept_parts) + len(facts) - len(kept_facts)
            if dropped and not any(a.fault_id == fault.id for a in self.run_state.applied):
                self.applied(fault, f"episode and event log dropped {dropped} pieces")
            parts, facts = kept_parts, kept_facts
        return tuple(parts), tuple(facts)

    # -- search ---------------------------------------------------------------------------
    def hybrid(self, query: str, units: Sequence[Unit], keyword: Ranker) -> list[Unit]:
        """BM25 over each unit's atomic facts and embeddings by max similarity over them,
        each cut to ``hybrid_candidates``, fused by reciprocal rank."""
        depth = max(self.params.hybrid_candidates, self.params.top_k)
        by_keyword = keyword.rank(query, [u.index_text for u in units])[:depth]
        owners = [i for i, u in enumerate(units) for _ in u.dense_texts]
        texts = [text for u in units for text in u.dense_texts]
        by_dense = list(dict.fromkeys(owners[i] for i in self.dense.rank(query, texts)))[:depth]
        return [units[i] for i in _fuse([by_keyword, by_dense], self.params.rrf_k)]

    def _missed(self, case_id: str, ranked: list[Unit]) -> list[Unit]:
        """Without the units of a RetrievalError planted at this case's hybrid retrieval: it
        misses them for every query of the case."""
        fault = self.fault("RetrievalError", case_id)
        if fault is None:
            return ranked
        return [u for u in ranked if not u.sources & fault.sources]

    def _stage(self, received: Sequence[Unit], passed: Sequence[Unit]) -> None:
        self.search.stages.append(
            Stage(op_id(), frozenset(u.id for u in received), frozenset(u.id for u in passed))
        )

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        self.search = CaseSearch()
        k = self.params.top_k
        with operation("memory_system.hybrid_retrieval", category="retrieval"):
            read(query)
            use(self.params, "top_k", "hybrid_candidates", "rrf_k")
            self.record_ranker()
            ranked = self.hybrid(question.text, self.units, self.keyword)
            fault = self.fault("RetrievalError", case_id)
            if fault is not None and any(u.sources & fault.sources for u in self.units):
                self.applied(fault, "hybrid retrieval missed the units holding the evidence")
            round1 = self._missed(case_id, ranked)[:k]
            if self.step(f"search:{case_id}"):
                round1 = self.repair_retrieval(round1, self.units)
            read(*(u.var for u in round1))
            hybrid_var = self._results(f"hybrid:{case_id}", round1, "hybrid_retrieval_results")
            self._stage((), round1)
        with operation("memory_system.agentic_round1_bundle", category="retrieval"):
            self.step(f"round1:{case_id}")  # passes on what it received: nothing to restore
            read(query, hybrid_var)
            use(self.params, "agentic_rounds", "sufficiency_top")
            check = self.check(question.text, round1, case_id)
            final = check is None or check.sufficient
            round1_var = self._results(
                case_id if final else f"round1:{case_id}",
                round1,
                "memory_context" if final else "agentic_round1_results",
                hybrid_var,
                context=final,
            )
            self._stage(round1, round1)
            if check is None or check.sufficient:
                return self._items(round1), round1_var, op_id()
        sufficiency = check
        with operation("memory_system.agentic_round2_bundle", category="retrieval"):
            read(query, round1_var, self._sufficiency_var)
            use(self.params, "refined_queries", "top_k", "hybrid_candidates", "rrf_k")
            texts = [u.line() for u in round1[: self.params.sufficiency_top]]
            queries = self.steps.refine(
                self.prompt(EVERMEMOS_REFINE), question.text, texts, sufficiency, self.params
            )
            write(variable(f"refined_queries:{case_id}", queries, category="llm_response"))
            rankings = [
                [u.id for u in self._missed(case_id, self.hybrid(q, self.units, self.keyword))]
                for q in queries
            ]
            by_id = {u.id: u for u in self.units}
            fused = [by_id[i] for i in _fuse(rankings, self.params.rrf_k)]
            pool = list({u.id: u for u in [*round1, *fused]}.values())
            merged = pool[: 2 * k]
            if self.step(f"round2:{case_id}"):
                merged = self.repair_retrieval(merged, pool)
            new = [u for u in merged if u not in round1]
            read(*(u.var for u in new))
            final_rerank = bool(self.params.final_rerank)
            merged_var = self._results(
                f"round2:{case_id}" if final_rerank else case_id,
                merged if final_rerank else merged[:k],
                "agentic_round2_results" if final_rerank else "memory_context",
                round1_var,
                *(u.var for u in new),
                context=not final_rerank,
            )
            self._stage(round1, merged if final_rerank else merged[:k])
            if not final_rerank:
                return self._items(merged[:k]), merged_var, op_id()
        with operation("memory_system.agentic_final_rerank", category="retrieval"):
            read(query, merged_var)
            use(self.params, "top_k", "final_rerank")
            order = self.hybrid(question.text, merged, self.rerank_keyword)
            top = self._planted_rerank(case_id, order, k)[:k]
            if self.step(f"rerank:{case_id}"):
                top = self.repair_retrieval(top, order)
            context = self._results(case_id, top, "memory_context", merged_var, context=True)
            self._stage(merged, top)
            return self._items(top), context, op_id()

    def repair_retrieval(self, results: list[Unit], found: Sequence[Unit]) -> list[Unit]:
        """The oracle's retrieval step: its results plus the units holding the evidence among
        those it ``found`` (every stored unit for the hybrid search; what a later stage received
        or retrieved itself), each in place of the lowest-ranked result holding none
        (``with_evidence``: the same result size; only those units when the repair is precise)."""
        wanted = self.repair_sources()
        shown = {u.id for u in results}
        extra = [u for u in found if u.id not in shown and u.sources & wanted]
        if not extra and not self.precise_search:
            return results
        if extra:
            self.repaired(f"added {', '.join(u.id for u in extra)}", "RetrievalError")
        return with_evidence(
            results, extra, lambda u: bool(u.sources & wanted), precise=self.precise_search
        )

    def check(self, question: str, round1: list[Unit], case_id: str) -> Sufficiency | None:
        """The sufficiency check (None when only one round runs)."""
        if self.params.agentic_rounds < 2:
            return None
        units = [u.line() for u in round1[: min(self.params.sufficiency_top, self.params.top_k)]]
        prompt = self.prompt(EVERMEMOS_SUFFICIENCY)
        use(self.params, "sufficiency_threshold")
        result = self.steps.sufficiency(prompt, question, units, self.params)
        self._sufficiency_var = variable(
            f"sufficiency:{case_id}",
            result.as_json(),
            category="llm_response",
            class_name="sufficiency_check",
        )
        write(self._sufficiency_var)
        return result

    def _planted_rerank(self, case_id: str, order: list[Unit], k: int) -> list[Unit]:
        fault = self.fault("RetrievalError", f"{RERANK_ANCHOR}{case_id}")
        if fault is None:
            return order
        kept = [u for u in order if not u.sources & fault.sources]
        if any(u.sources & fault.sources for u in order[:k]):
            self.applied(fault, f"the rerank dropped {len(order) - len(kept)} units")
        return kept

    def _results(
        self, name: str, units: Sequence[Unit], category: str, *inputs: Var, context: bool = False
    ) -> Var:
        """A list of retrieved units (the answer context when ``context``)."""
        value = [line for u in units for line in (u.context() if context else u.value())]
        sources = inputs if inputs else tuple(u.var for u in units)
        return variable(
            name,
            value,
            category=category,
            class_name="context" if context else category,
            sources=sources,
        )

    def _items(self, units: Sequence[Unit]) -> list[Item]:
        """The answer's items: each unit's episode, one item per message it tells of (the
        offline answerer quotes items, so whole episodes would be quoted at once)."""
        return [
            Item(f"{u.id}/{i}", part.text, u.time, part.sources, u.var)
            for u in units
            for i, part in enumerate(u.parts)
        ]

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        holders = self.holders.get(key)
        if holders:
            for stage in self.search.stages:
                if stage.received & holders and not stage.passed & holders:
                    return Loss("RetrievalError", stage.op_id)
            return Loss("RetrievalError", self.search.stages[0].op_id)
        if key in self.dropped:
            return Loss("ExtractionError", self.dropped[key])
        return None


def _fuse(rankings: Sequence[Sequence[T]], k: int) -> list[T]:
    """Unweighted reciprocal rank fusion (ties: the smaller item first)."""
    scores: dict[T, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))


def _gap(before: str, after: str) -> str:
    """A time-gap label between two session dates."""
    first, second = parse_date(before), parse_date(after)
    if first is None or second is None:
        return "new session"
    days = (second - first).days
    return "new session, the same day" if days == 0 else f"new session, {days} days later"
