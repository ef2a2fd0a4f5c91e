"""Naive RAG: buffer messages -> cut a chunk every `chunk_size` messages -> index -> retrieve
top-k chunks -> answer from their messages."""

from __future__ import annotations

from memtrace.systems.base import System, op_id, with_evidence
from memtrace.systems.core import Item, Loss, message_item
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.params import use
from memtrace.systems.text import content
from memtrace.tracing import OFF, Var, edge, mutation, operation, read, variable


class RagSystem(System):
    name = "rag"
    aliases = ("naiverag",)  # MemBase's name of naive RAG
    # every message stays verbatim in a chunk that is never rewritten or deleted
    fault_types = ("RetrievalError", "ResponseError")
    parameters = (*System.parameters, "chunk_size", "top_k")

    def reset(self) -> None:
        self.buffer: list[tuple[Turn, str]] = []
        self.buffer_var = OFF
        self.chunks: list[tuple[Var, list[Item]]] = []
        self.stored: set[str] = set()  # dia_ids in some chunk

    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        with operation("memory_system.message_buffer_update", category="update"):
            self.step(f"buffer:{turn.dia_id}")  # keeps every message: nothing to repair
            read(message)
            use(self.params, "chunk_size")
            self.buffer.append((turn, date))
            lines = [f"[{d}] {t.speaker}: {t.text}" for t, d in self.buffer]
            if self.buffer_var.id:
                self.buffer_var = mutation(self.buffer_var, lines, category="buffer")
            else:
                self.buffer_var = variable("message-buffer", lines, category="buffer")
            edge(message, self.buffer_var)
        if len(self.buffer) >= self.params.chunk_size:
            self.finish_construction()

    def finish_construction(self) -> None:
        if not self.buffer:
            return
        first = self.buffer[0][0].dia_id
        with operation("memory_system.finalize_memory_unit", category="extraction"):
            self.step(f"chunk:{first}")  # a chunk holds its messages verbatim: nothing to repair
            read(self.buffer_var)
            lines = [f"[{d}] {t.speaker}: {t.text}" for t, d in self.buffer]
            chunk = variable(
                f"chunk-{len(self.chunks) + 1:05d}",
                lines,
                category="memory_entry",
                sources=(self.buffer_var,),
            )
            self.buffer_var = mutation(self.buffer_var, [], category="buffer")
        items = [message_item(t.dia_id, t.speaker, t.text, d, chunk) for t, d in self.buffer]
        with operation("memory_system.add", category="embedding"):
            self.step(f"index:{first}")
            read(chunk)
            tokens = sorted({w for item in items for w in content(item.text)})
            variable(
                chunk.name, tokens, category="embedding", class_name="index_entry", sources=(chunk,)
            )
        self.chunks.append((chunk, items))
        self.stored |= {t.dia_id for t, _ in self.buffer}
        self.buffer = []

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        with operation("memory_system.retrieve", category="retrieval"):
            read(query)
            use(self.params, "top_k")
            self.record_ranker()
            docs = ["\n".join(i.text for i in items) for _, items in self.chunks]
            searched = [self.chunks[i] for i in self.ranker.rank(question.text, docs)]
            ranked = self.retrieval_fault(
                case_id, searched, _chunk_sources, self.params.top_k, "chunks"
            )
            top = ranked[: self.params.top_k]
            if self.step(f"search:{case_id}"):
                top = self.repair_retrieval(top, searched)
            chunk_vars = [chunk for chunk, _ in top]
            read(*chunk_vars)
            items = [item for _, chunk_items in top for item in chunk_items]
            context = variable(
                case_id,
                [i.text for i in items],
                category="memory_context",
                class_name="context",
                sources=(query, *chunk_vars),
            )
            return items, context, op_id()

    def repair_retrieval(
        self, top: list[tuple[Var, list[Item]]], searched: list[tuple[Var, list[Item]]]
    ) -> list[tuple[Var, list[Item]]]:
        """The oracle's search: its chunks plus the stored chunks holding the evidence, in place
        of its lowest-ranked chunks that hold none, in the order the search ranked them
        (``searched``: every chunk, no fault applied; ``with_evidence``)."""
        place = {id(items): i for i, (_, items) in enumerate(searched)}
        wanted = self.repair_sources()
        shown_items = {id(items) for _, items in top}  # chunk vars are empty when untraced
        extra = [
            (n, c)
            for n, c in enumerate(self.chunks, start=1)
            if id(c[1]) not in shown_items and _chunk_sources(c) & wanted
        ]
        if extra:
            names = ", ".join(f"chunk-{n:05d}" for n, _ in extra)
            self.repaired(f"added {names}", "RetrievalError")
        chunks = [c for _, c in extra]
        return with_evidence(
            top,
            chunks,
            lambda c: bool(_chunk_sources(c) & wanted),
            precise=self.precise_search,
            rank=lambda c: place[id(c[1])],
        )

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        stored = key.split("#")[0] in self.stored
        return Loss("RetrievalError", search_op) if stored else None


def _chunk_sources(chunk: tuple[Var, list[Item]]) -> frozenset[str]:
    """The messages a chunk holds."""
    return frozenset().union(*(item.sources for item in chunk[1]))
