"""A small notes assistant served as a web service (Starlette), traced the way production traces
it: every user message and every question is its own HTTP request, hence its own OTel trace,
under a SERVER root span carrying ``session.id``, ``user.id`` and ``gen_ai.conversation.id``.
The model calls go through the official ``opentelemetry-instrumentation-openai-v2`` (message
content on the spans: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` with the
latest GenAI conventions) to the tests' scripted OpenAI-compatible server; the memory is a
Mem0-style store per user whose records keep their ids across requests, reported as GenAI
memory spans scoped by Mem0's ``user_id``.

A message request: extract a fact (model call), decide what to do with it given the user's
memories (model call), apply the decision (``create_memory`` / ``update_memory`` /
``delete_memory``). A question request: search the user's memories by shared words
(``search_memory``), answer from what was found (model call), score the answer against the gold
one; the question's root span carries ``memtrace.case.*``. What is said and replied, and the
seven failures planted in the replies: tests/data/timelines/planted.json.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_openai import Reply

PLANTED_FILE = Path(__file__).parent / "data" / "timelines" / "planted.json"
PLANTED: dict[str, Any] = json.loads(PLANTED_FILE.read_text(encoding="utf-8"))
EXTRACT_PROMPT = "Extract the one fact worth remembering from the user's message. Reply with it."
DECIDE_PROMPT = (
    "You manage the user's memories. Given them and a new fact, reply with JSON "
    '{"event": "ADD" | "UPDATE" | "DELETE", "id": the memory\'s id or null, "text": its new '
    "text or null}."
)
ANSWER_PROMPT = "Answer the user's question from their memories only, in a few words."
CAPTURE_ENV = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


@dataclass(frozen=True)
class Call:
    """One HTTP request the test client makes, in order."""

    user: str
    session: str
    path: str  # /message or /ask
    body: dict[str, Any]


def calls() -> list[Call]:
    """Every user's messages, then their questions, the users' requests interleaved."""
    per_user: list[list[Call]] = []
    for user, said in PLANTED["users"].items():
        mine = [Call(user, m["session"], "/message", {"text": m["text"]}) for m in said["messages"]]
        mine += [Call(user, q["session"], "/ask", {"case": q["case"]}) for q in said["questions"]]
        per_user.append(mine)
    ordered: list[Call] = []
    while any(per_user):
        for mine in per_user:
            if mine:
                ordered.append(mine.pop(0))
    return ordered


def questions() -> dict[str, dict[str, Any]]:
    return {q["case"]: q for said in PLANTED["users"].values() for q in said["questions"]}


def messages() -> dict[str, dict[str, Any]]:
    return {m["text"]: m for said in PLANTED["users"].values() for m in said["messages"]}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


class Replies:
    """The scripted model: what it replies to each prompt (the planted failures included)."""

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        texts = [m.get("content") or "" for m in body.get("messages", ())]
        system, said = texts[0], texts[1:]
        if system == EXTRACT_PROMPT:
            return Reply(content=messages()[said[-1]]["fact"])
        if system == DECIDE_PROMPT:
            return Reply(content=json.dumps(self._decision(said[-1])))
        if system == ANSWER_PROMPT:
            asked = said[-1]
            return next(
                Reply(content=q["reply"]) for q in questions().values() if q["question"] == asked
            )
        return None

    @staticmethod
    def _decision(prompt: str) -> dict[str, Any]:
        fact = prompt.rsplit("New fact: ", 1)[1]
        planned = next((m.get("decision") for m in messages().values() if m["fact"] == fact), None)
        if planned is None:
            return {"event": "ADD", "id": None, "text": None}
        found = re.search(r"\[([\w-]+)\] " + re.escape(planned["of"]), prompt)
        return {
            "event": planned["event"],
            "id": found and found.group(1),
            "text": planned.get("text"),
        }


class Memory:
    """Mem0-style memories of each user: records with ids kept across requests."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.held: dict[str, dict[str, str]] = {}  # user -> memory id -> text
        self.added = 0

    def listing(self, user: str) -> str:
        held = self.held.get(user, {})
        return "\n".join(f"[{key}] {text}" for key, text in held.items()) or "(none)"

    def apply(self, user: str, fact: str, decision: dict[str, Any]) -> None:
        held = self.held.setdefault(user, {})
        event, memory_id = decision.get("event"), decision.get("id")
        if event == "UPDATE" and memory_id in held:
            held[memory_id] = decision["text"]
            self._span(user, "update_memory", [{"id": memory_id, "content": decision["text"]}])
        elif event == "DELETE" and memory_id in held:
            del held[memory_id]
            self._span(user, "delete_memory", [{"id": memory_id}])
        else:
            self.added += 1
            memory_id = f"{user}-mem-{self.added}"
            held[memory_id] = fact
            self._span(user, "create_memory", [{"id": memory_id, "content": fact}])

    def search(self, user: str, query: str, k: int = 3) -> str:
        """The memories sharing the most words with ``query``; the context the answer gets."""
        held = self.held.get(user, {})
        scored = sorted(
            ((len(words(text) & words(query)), key, text) for key, text in held.items()),
            key=lambda s: -s[0],
        )
        found = [(key, text) for score, key, text in scored if score][:k]
        context = "Memories:\n" + ("\n".join(f"- {text}" for _, text in found) or "(none)")
        records = [{"id": key, "content": text} for key, text in found]
        self._span(user, "search_memory", records, query=query, output=context)
        return context

    def _span(
        self,
        user: str,
        operation: str,
        records: list[dict[str, str]],
        query: str | None = None,
        output: str | None = None,
    ) -> None:
        with self.tracer.start_as_current_span(f"{operation} memories") as span:
            span.set_attribute("gen_ai.operation.name", operation)
            span.set_attribute("gen_ai.memory.store.id", "memories")
            span.set_attribute("user_id", user)  # Mem0 scopes every memory call by user
            span.set_attribute("gen_ai.memory.records", json.dumps(records))
            if query is not None:
                span.set_attribute("gen_ai.memory.query.text", query)
            if output is not None:
                span.set_attribute("output.value", output)


def create_app(base_url: str, tracer: Any) -> Any:
    """The service: ``POST /message`` and ``POST /ask``, each under its own SERVER span."""
    import openai
    from opentelemetry.trace import SpanKind
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    model = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    memory = Memory(tracer)

    def chat(*texts: str) -> str:
        roles = ["system", *(["user"] * (len(texts) - 1))]
        reply = model.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": r, "content": t} for r, t in zip(roles, texts, strict=True)],  # type: ignore[misc]
        )
        return reply.choices[0].message.content or ""

    @contextmanager
    def served(request: Request, route: str) -> Iterator[Any]:
        user, session = request.headers["x-user"], request.headers["x-session"]
        attributes = {
            "http.request.method": "POST",
            "http.route": route,
            "session.id": session,
            "user.id": user,
            "gen_ai.conversation.id": f"conversation-{session}",
        }
        with tracer.start_as_current_span(
            f"POST {route}", kind=SpanKind.SERVER, attributes=attributes
        ) as span:
            yield span

    async def message(request: Request) -> JSONResponse:
        said = (await request.json())["text"]
        with served(request, "/message"):
            user = request.headers["x-user"]
            fact = chat(EXTRACT_PROMPT, said)
            decision = json.loads(
                chat(DECIDE_PROMPT, f"{memory.listing(user)}\n\nNew fact: {fact}")
            )
            memory.apply(user, fact, decision)
        return JSONResponse({"remembered": fact})

    async def ask(request: Request) -> JSONResponse:
        case = questions()[(await request.json())["case"]]
        with served(request, "/ask") as span:
            span.set_attribute("memtrace.case.id", case["case"])
            span.set_attribute("memtrace.case.question", case["question"])
            span.set_attribute("memtrace.case.golden_answers", [case["golden"]])
            span.set_attribute("memtrace.case.evidence", [case["evidence"]])
            context = memory.search(request.headers["x-user"], case["question"])
            answer = chat(ANSWER_PROMPT, context, case["question"])
            right = case["golden"].lower() in answer.lower()
            span.set_attribute("memtrace.case.judge_score", 1.0 if right else 0.0)
        return JSONResponse({"answer": answer})

    return Starlette(
        routes=[Route("/message", message, methods=["POST"]), Route("/ask", ask, methods=["POST"])]
    )


def run_timeline_app(base_url: str, processors: Sequence[Any]) -> None:
    """Serve the app in-process and make every request of ``calls()`` through Starlette's test
    client; spans go to ``processors`` (an in-memory exporter's, an OTLP exporter's)."""
    from instrumented_app import required

    module = required(
        "opentelemetry.instrumentation.openai_v2", "opentelemetry-instrumentation-openai-v2"
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from starlette.testclient import TestClient

    provider = TracerProvider(resource=Resource.create({"service.name": "notes-service"}))
    for processor in processors:
        provider.add_span_processor(processor)
    before = {key: os.environ.get(key) for key in CAPTURE_ENV}
    os.environ.update(CAPTURE_ENV)  # read when the instrumentor is set up and at each call
    instrumentor = module.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        app = create_app(base_url, provider.get_tracer("notes-service"))
        with TestClient(app) as client:
            for call in calls():
                headers = {"x-user": call.user, "x-session": call.session}
                client.post(call.path, json=call.body, headers=headers).raise_for_status()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def capture(base_url: str, folder: Path) -> tuple[Path, list[Path]]:
    """The app's spans as one OTLP JSON file (``all.json``: the one-trace version) and as one
    file per request (``requests/<OTel trace id>.json``: what an exporter writing files per
    request leaves, the timelines' input)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memtrace.integrations.otel import write_otlp_json

    exporter = InMemorySpanExporter()
    run_timeline_app(base_url, [SimpleSpanProcessor(exporter)])
    spans = exporter.get_finished_spans()
    (folder / "requests").mkdir(parents=True, exist_ok=True)
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    files = [
        write_otlp_json(group, folder / "requests" / f"{trace_id:032x}.json")
        for trace_id, group in by_trace.items()
    ]
    return write_otlp_json(spans, folder / "all.json"), files
