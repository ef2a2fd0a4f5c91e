"""Long-context: keep the last `window` messages (trimmed after each session) and answer from
the whole window."""

from __future__ import annotations

from memtrace.systems.base import System, op_id
from memtrace.systems.core import Item, Loss, message_item
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.params import use
from memtrace.tracing import OFF, Var, edges, mutation, operation, read, variable


class LongContextSystem(System):
    name = "long-context"
    # one memory unit, the window, rewritten per session; its search is a pass-through
    fault_types = ("UpdateError", "ResponseError")
    parameters = (*System.parameters, "window")

    def reset(self) -> None:
        self.pending: list[tuple[Turn, str, Var]] = []
        self.window: list[Item] = []
        self.window_var = OFF
        self.trimmed: dict[str, str] = {}  # dia_id -> the op that trimmed it away
        self.updates = 0  # window updates so far: the step key of each

    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        self.pending.append((turn, date, message))

    def end_session(self, date: str) -> None:
        self.updates += 1
        with operation("memory_system.memory_update", category="update"):
            repairing = self.step(f"window:{self.updates}")
            use(self.params, "window")
            read(*(message for _, _, message in self.pending))
            if self.window_var.id:
                read(self.window_var)
            window = self.window + [
                message_item(t.dia_id, t.speaker, t.text, d, OFF) for t, d, _ in self.pending
            ]
            cut = max(0, len(window) - self.params.window)
            dropped, kept = window[:cut], window[cut:]
            # a planted fault trims the evidence away at the update of a later session
            fault = self.fault("UpdateError", self.pending[0][0].dia_id) if self.pending else None
            if fault is not None:
                lost = [i for i in kept[: -len(self.pending)] if i.sources & fault.sources]
                if lost:
                    self.applied(fault, f"trimmed {', '.join(i.key for i in lost)} from the window")
                lost_keys = {i.key for i in lost}
                dropped += lost
                kept = [i for i in kept if i.key not in lost_keys]
            if repairing:  # the oracle's window keeps the evidence messages it would trim
                restored = {i.key for i in dropped if i.sources & self.repair_sources()}
                if restored:
                    self.repaired(
                        f"kept {', '.join(sorted(restored))} in the window", "UpdateError"
                    )
                    keys = {i.key for i in kept} | restored
                    kept = [i for i in window if i.key in keys]
                    dropped = [i for i in dropped if i.key not in restored]
            for item in dropped:
                self.trimmed[item.key] = op_id()
            self.window = kept
            lines = [f"[{i.date}] {i.text}" for i in self.window]
            if self.window_var.id:
                self.window_var = mutation(self.window_var, lines, category="memory_entry")
            else:
                self.window_var = variable("context-window", lines, category="memory_entry")
            edges([message for _, _, message in self.pending], self.window_var)
            for item in self.window:
                item.var = self.window_var
        self.pending = []

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        with operation("memory_system.retrieve", category="retrieval"):
            # passes the whole window on: no stored line for a repair to add
            self.step(f"search:{case_id}")
            read(query, self.window_var)
            lines = [f"[{i.date}] {i.text}" for i in self.window]
            context = variable(
                "window",
                lines,
                category="memory_context",
                class_name="context",
                sources=(self.window_var, query),
            )
            return list(self.window), context, op_id()

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        trimmed_by = self.trimmed.get(key.split("#")[0])
        return Loss("UpdateError", trimmed_by) if trimmed_by is not None else None
