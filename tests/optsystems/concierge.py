"""Concierge: a hotel concierge's memory of guest requests, plain functions over an
OpenAI-compatible endpoint (the ``openai`` client, as a user's code calls it).

Per guest message ``note`` asks the model to write the message down under the ``extract``
prompt (extraction); ``file_note`` files the note; per question ``lookup`` returns the
``top_k`` notes sharing most words with it (retrieval) and ``reply`` asks the model to answer
from them under the ``reply`` prompt (generation); the judge: the gold answer is in the reply.
Its knobs are declared by the operations that read them (``read_by``); nothing of them is
traced as a variable.

The planted weak default is the ``extract`` prompt (``EXTRACT``): it asks for the gist, and a
model that follows it drops the room numbers and times (``Replies`` below, the scripted
server's replies, follow the prompt as a small model would: the whole message when the prompt
asks to keep numbers, else its first four words).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import tomli_w

from memtrace.optimize.plugin import (
    CaseResult,
    Configuration,
    Knob,
    ParameterKnob,
    PromptKnob,
    SystemRun,
    Tracing,
)
from memtrace.settings import Settings
from memtrace.tracing import SimClock, case, operation, read, session, trace, variable

EXTRACT = "Write down the gist of the guest's message in a few words."
REPLY = "Answer the question from the notes in one short sentence."
KEEP = "Keep every number, time and name exactly as the guest wrote it."
GUESTS = ["Mr Alvarez", "Ms Brandt", "Dr Chen", "Mrs Dahl", "Mr Eze", "Ms Fontaine"]
GUESTS += ["Mr Gray", "Ms Haddad", "Dr Ito"]


@dataclass(frozen=True)
class Stay:
    id: str
    messages: tuple[tuple[str, str], ...]
    questions: tuple[tuple[str, str, str], ...]  # (id, question, gold)


def stay(number: int) -> Stay:
    guest, room, hour = GUESTS[number - 1], 200 + 11 * number, 5 + number % 4
    sid = f"stay{number}"
    messages = (
        (f"{sid}-m1", f"{guest} asks for a wake-up call at {hour} am tomorrow."),
        (f"{sid}-m2", f"Taxi to the airport for {guest} from room {room} please."),
        (f"{sid}-m3", "A second pillow and extra towels."),
    )
    questions = (
        (f"{sid}-wake", f"When does {guest} want the wake-up call?", f"{hour} am"),
        (f"{sid}-room", "Which room is the taxi guest in?", str(room)),
        (f"{sid}-pillow", "What did the guest ask for besides towels?", "pillow"),
    )
    return Stay(sid, messages, questions)


STAYS = {s.id: s for s in map(stay, range(1, 10))}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower())) - {"the", "a", "for", "did", "what"}


def chat(client: openai.OpenAI, system: str, user: str) -> str:
    reply = client.chat.completions.create(
        model="concierge",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
    )
    return reply.choices[0].message.content or ""


def run_stay(
    client: openai.OpenAI,
    prompts: dict[str, str],
    top_k: int,
    visit: Stay,
    only: Collection[str] | None = None,
) -> list[tuple[str, bool, str]]:
    """(question id, passed, reply) per question (in ``only``)."""
    notes = []
    with session("requests"):
        for message_id, text in visit.messages:
            with operation("concierge.note", category="extraction"):
                message = variable(message_id, text, category="message")
                read(message)
                written = chat(client, prompts["extract"], text)
                raw = variable(f"written:{message_id}", written, sources=(message,))
            with operation("concierge.file_note", category="update"):
                read(raw)
                notes.append((written, variable(f"note:{message_id}", written, category="memory",
                                                 sources=(raw,))))  # fmt: skip
    out = []
    with session("questions"):
        for question_id, text, gold in visit.questions:
            if only is not None and question_id not in only:
                continue
            question = variable(question_id, text, class_name="query")
            with operation("concierge.lookup", category="retrieval"):
                read(question, *(v for _, v in notes))
                ranked = sorted(notes, key=lambda n: -len(words(text) & words(n[0])))[:top_k]
                found = [t for t, _ in ranked]
                sources = tuple(v for _, v in ranked)
                context = variable(
                    f"found:{question_id}", found, category="context", sources=sources
                )
            with operation("concierge.reply", category="generation"):
                read(question, context)
                listed = "\n".join(f"- {t}" for t, _ in ranked)
                answer = chat(client, prompts["reply"], f"Notes:\n{listed}\nQuestion: {text}")
                prediction = variable(
                    f"reply:{question_id}", answer, class_name="prediction", sources=(context,)
                )
            passed = gold.lower() in answer.lower()
            evidence = [f"{m}@1" for m, t in visit.messages if gold.lower() in t.lower()]
            case(id=question_id, query=question.id, prediction=prediction.id,
                 golden_answers=[gold], judge_score=1.0 if passed else 0.0,
                 evidence=evidence)  # fmt: skip
            out.append((question_id, passed, answer))
    return out


# -- the user's own code: its configuration file and evaluation, no memtrace in it -----------


def load_config(path: Path) -> dict[str, Any]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {"prompts": {"extract": EXTRACT, "reply": REPLY, **data.get("prompts", {})},
            "top_k": int(data.get("top_k", 2))}  # fmt: skip


def evaluate(config_file: Path, ids: Sequence[str], base_url: str) -> float:
    config = load_config(config_file)
    client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0)
    results = [
        r for i in ids for r in run_stay(client, config["prompts"], config["top_k"], STAYS[i])
    ]
    return sum(passed for _, passed, _ in results) / len(results)


# -- the plugin ------------------------------------------------------------------------------


class ConciergeSystem:
    name = "concierge"
    answer_op = "concierge.reply"

    def __init__(self, base_url: str) -> None:
        self.client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0)

    def knobs(self) -> list[Knob]:
        return [
            PromptKnob("extract", EXTRACT, read_by=("concierge.note",)),
            PromptKnob("reply", REPLY, read_by=("concierge.reply",)),
            ParameterKnob("top_k", 2, 1, 3, read_by=("concierge.lookup",)),
        ]

    def case_ids(self) -> list[str]:
        return list(STAYS)

    def run(
        self,
        config: Configuration,
        ids: Sequence[str],
        *,
        tracing: Tracing | None = None,
        only: Collection[str] | None = None,
    ) -> SystemRun:
        results, traces = [], {}
        for sid in ids:
            visit = STAYS[sid]
            trace_id = f"{tracing.prefix}concierge-{sid}" if tracing else sid
            path = tracing.directory / f"{trace_id}.jsonl" if tracing else Path()
            with trace(path, trace_id, system=self.name, clock=SimClock(),
                       enabled=tracing is not None):  # fmt: skip
                answered = run_stay(
                    self.client, dict(config.prompts), int(config.params["top_k"]), visit, only
                )
            if tracing is not None:
                traces[trace_id] = path
            asked = {q[0]: q for q in visit.questions}
            results += [
                CaseResult(
                    qid,
                    sid,
                    passed,
                    reply,
                    asked[qid][1],
                    asked[qid][2],
                    trace_id if tracing else "",
                )
                for qid, passed, reply in answered
            ]
        return SystemRun(results, traces)

    def write_config(self, config: Configuration, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "concierge.toml"
        data = {"top_k": int(config.params["top_k"]), "prompts": dict(config.prompts)}
        path.write_text(tomli_w.dumps(data, multiline_strings=True), encoding="utf-8")
        return [path]


def make_system(settings: Settings) -> ConciergeSystem:
    return ConciergeSystem(settings.llm.base_url or "")


class Replies:
    """The scripted server: follows the system prompt as a small model would. Extraction keeps
    the whole message only when told to keep numbers, else its first four words; the reply
    quotes the note sharing most words with the question; a reflection request (memtrace's
    ``<prompt>``) gets the prompt with the instruction to keep numbers added, whichever prompt
    it is (the server does not know which one matters)."""

    def __call__(self, body: dict[str, Any]) -> Any:
        from fake_openai import Reply

        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next(m["content"] for m in messages if m["role"] == "user")
        if "<prompt>" in user:
            current = user.split("<prompt>\n", 1)[1].split("\n</prompt>", 1)[0]
            return Reply(json.dumps({"prompt": f"{current} {KEEP}"}))
        if user.startswith("Notes:"):
            listed, question = user.split("\nQuestion: ", 1)
            notes = [line[2:] for line in listed.splitlines()[1:]]
            best = max(notes, key=lambda n: len(words(n) & words(question)), default="")
            return Reply(best or "I do not know.")
        if "number" in system.lower():
            return Reply(user)
        return Reply(" ".join(user.split()[:4]))
