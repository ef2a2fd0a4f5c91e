"""A real local OpenAI-compatible HTTP server for tests, driven by a script of replies.

Usage in a test module::

    from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401

    def test_x(fake_openai: FakeOpenAI) -> None:
        fake_openai.script(Reply(status=429), Reply(content='{"ok": true}'))
        ... point openai / LLMClient at fake_openai.base_url ...
        assert len(fake_openai.chat_requests) == 2

Each chat request consumes the next scripted reply; when the script is empty, ``responder`` (a
function of the request body, e.g. ``Mem0Replies``) answers, then ``default`` (``None`` = HTTP 500
"script exhausted", so an unexpected call fails loudly). ``/v1/embeddings`` returns deterministic
vectors derived from each input's hash, or with ``bag_of_words`` set, word-count vectors of that
many dimensions (cosine similarity then follows shared words, as a real embedder roughly does).
Every request is recorded (header names lower-cased). A request with ``stream`` set gets its
reply as server-sent events.
``rejected_formats`` names ``response_format`` types answered with ``rejected_status`` (400; as
an endpoint that does not support them; no reply is consumed). An input containing one of
``hidden`` gets a vector of -1s, whose cosine with any word-count vector is negative (a planted
retrieval miss: below any search threshold).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memtrace.systems.judge import judge_response, offline_verdict
from memtrace.systems.text import content


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion with ``content`` (or, with ``tool_calls``, a request to
    call those tools: ``(name, arguments)`` pairs), or an error ``status``."""

    content: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass(frozen=True)
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeOpenAI:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: list[Reply] = []
        self.default: Reply | None = None
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        self.bag_of_words: int | None = None
        self.hidden: set[str] = set()
        self.rejected_formats: set[str] = set()
        self.rejected_status = 400  # llama.cpp's Python server says 500
        self.in_flight = 0
        self.max_in_flight = 0  # the most chat requests it was answering at once
        self.requests: list[Recorded] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.responder is not None:
            reply = self.responder(body)
            if reply is not None:
                return reply
        return self.default

    def _record(self, item: Recorded) -> None:
        with self._lock:
            self.requests.append(item)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # silence stderr
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake._record(
                    Recorded(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                )
                if self.path.endswith("/embeddings"):
                    self._send(200, _embeddings(body, fake.bag_of_words, fake.hidden))
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                requested = (body.get("response_format") or {}).get("type")
                if requested in fake.rejected_formats:
                    error = {"message": f"response_format {requested} is not supported"}
                    body = {"error": {**error, "type": "invalid_request_error"}}
                    self._send(fake.rejected_status, body)
                    return
                reply = fake._next(body)
                if reply is None:
                    self._send(500, {"error": {"message": "script exhausted", "type": "server"}})
                    return
                if reply.delay:
                    with fake._lock:
                        fake.in_flight += 1
                        fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    time.sleep(reply.delay)
                    with fake._lock:
                        fake.in_flight -= 1
                if reply.status != 200:
                    error = {"message": f"scripted {reply.status}", "type": "scripted"}
                    self._send(reply.status, {"error": error}, reply.headers)
                    return
                if body.get("stream"):
                    self._stream(_completion(body, reply), reply.headers)
                    return
                self._send(200, _completion(body, reply), reply.headers)

            def _stream(self, completion: dict[str, Any], headers: dict[str, str]) -> None:
                """The completion as server-sent events, as OpenAI streams one."""
                data = b"".join(
                    f"data: {json.dumps(chunk)}\n\n".encode() for chunk in _chunks(completion)
                )
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test); nothing to deliver

        return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["content"] = reply.content or None
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for index, (name, arguments) in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _chunks(completion: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A completion as the chunks of a stream: the role, the content, each tool call, the
    finish reason, then the usage (as ``stream_options.include_usage`` asks)."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    (choice,) = completion["choices"]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        yield chunk({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls", ())):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice["finish_reason"])
    yield {**head, "choices": [], "usage": completion["usage"]}


def _embeddings(
    body: dict[str, Any], bag_of_words: int | None = None, hidden: set[str] | None = None
) -> dict[str, Any]:
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    data = []
    for index, text in enumerate(texts):
        if bag_of_words and any(h in str(text) for h in hidden or ()):
            vector = [-1.0] * bag_of_words
        elif bag_of_words:
            vector = [0.0] * bag_of_words
            for word in re.findall(r"[a-z0-9]+", str(text).lower()):
                slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
                vector[slot % bag_of_words] += 1.0
            vector[0] += 0.01  # never the zero vector
        else:
            digest = hashlib.sha256(str(text).encode("utf-8")).digest()
            vector = [(b - 128) / 128 for b in digest[:8]]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(len(str(t).split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "fake"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Mem0Replies:
    """Valid replies to the real Mem0's prompts (mem0ai 1.0.x), with faults to plant.

    Fact extraction: the user message (``"<speaker>: <text>"``) is the one fact, unless its text
    contains one of ``drop`` (then no fact: an extraction fault). Update decision: ADD each new
    fact whose text no current memory has, NONE for the rest; when a new fact contains a
    ``trigger``, DELETE every current memory whose text contains ``delete[trigger]``, and UPDATE
    every one containing ``overwrite[trigger]`` to the new fact (the old text is lost).
    """

    def __init__(self) -> None:
        self.drop: set[str] = set()
        self.ignore: set[str] = set()
        self.delete: dict[str, str] = {}
        self.overwrite: dict[str, str] = {}
        self.added = 0
        self.planted: list[dict[str, str]] = []

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        messages = body.get("messages", [])
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if "Personal Information Organizer" in system:
            return Reply(json.dumps({"facts": self.facts(user)}))
        if "smart memory manager" in user:
            return Reply(json.dumps({"memory": self.decide(user)}))
        return None

    def facts(self, prompt: str) -> list[str]:
        found = []
        for line in prompt.removeprefix("Input:\n").splitlines():
            if line.startswith("user: ") and not any(d in line for d in self.drop):
                found.append(line.removeprefix("user: ").strip())
        return found

    def decide(self, prompt: str) -> list[dict[str, str]]:
        head, _, tail = prompt.partition("The new retrieved facts are mentioned")
        facts: list[str] = ast.literal_eval(_block(tail, 0))
        memories: list[dict[str, str]] = []
        if "Below is the current content of my memory" in head:
            memories = ast.literal_eval(_block(head, -1))
        actions = []
        known = {m["text"] for m in memories}
        for fact in facts:
            planted = [
                {"id": m["id"], "text": m["text"], "event": "DELETE"}
                for trigger, target in self.delete.items()
                if trigger in fact
                for m in memories
                if target in m["text"]
            ] + [
                {"id": m["id"], "text": fact, "event": "UPDATE", "old_memory": m["text"]}
                for trigger, target in self.overwrite.items()
                if trigger in fact
                for m in memories
                if target in m["text"]
            ]
            self.planted += planted
            actions += planted
            let_go = any(i in fact for i in self.ignore)
            if (
                fact not in known
                and not let_go
                and not any(a["event"] == "UPDATE" for a in planted)
            ):
                self.added += 1
                actions.append({"id": f"new-{self.added}", "text": fact, "event": "ADD"})
        return actions


def _block(text: str, which: int) -> str:
    """The first (0) or last (-1) triple-backtick block of ``text``."""
    blocks = re.findall(r"```\s*(.*?)\s*```", text, flags=re.DOTALL)
    return str(blocks[which]) if blocks else "[]"


class Mem0V2Replies:
    """Valid replies to the real Mem0's additive extraction (mem0ai 2.x), with faults to plant.

    Each ``user: <speaker>: <text>`` line of the prompt's ``## New Messages`` section becomes one
    new memory (that text), unless it contains one of ``drop`` (an extraction fault); when it
    contains a key of ``stale``, the reply also adds that key's text (an earlier statement that a
    later message contradicts: Mem0 2.x keeps both). ``calls`` counts the extraction calls.
    """

    def __init__(self) -> None:
        self.drop: set[str] = set()
        self.stale: dict[str, str] = {}
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        messages = body.get("messages", [])
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if "Memory Extractor" not in system or "## New Messages" not in user:
            return None
        self.calls += 1
        new = user.split("## New Messages", 1)[1].split("\n## ", 1)[0]
        texts: list[str] = []
        for line in new.splitlines():
            if not line.startswith("user: ") or any(d in line for d in self.drop):
                continue
            texts.append(line.removeprefix("user: ").strip())
            texts += [text for trigger, text in self.stale.items() if trigger in line]
        memories = [{"id": str(i), "text": t, "attributed_to": "user"} for i, t in enumerate(texts)]
        return Reply(json.dumps({"memory": memories}))


class DroppingMem0Model(Mem0V2Replies):
    """Issue 38's scripted model for the real Mem0 2.x run with the openai backend (its answer and
    judge on this endpoint too).

    Extraction: as ``Mem0V2Replies`` (each message one memory), except that every ``every``-th
    fact-bearing extraction drops all its facts; extractions are numbered by the messages they
    were asked about, in the order first asked, so a replay asking again gets the same reply
    (``dropped``: the ``"<speaker>: <text>"`` lines whose facts were dropped). Answer (the
    backend's ``Memories: ... Question: ...`` prompt): the first memory sharing a content word
    with the question, as a weak answerer would. Judge: the offline rule (``offline_verdict``).
    """

    def __init__(self, every: int = 7, f1_threshold: float = 0.5) -> None:
        super().__init__()
        self.every = every
        self.f1_threshold = f1_threshold
        self.numbered: dict[str, int] = {}  # the New Messages section -> its number
        self.dropped: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        messages = body.get("messages", [])
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if "## New Messages" in user:
            new = user.split("## New Messages", 1)[1].split("\n## ", 1)[0]
            said = [
                line.removeprefix("user: ").strip()
                for line in new.splitlines()
                if line.startswith("user: ")
            ]
            if said and self.numbered.setdefault(new, len(self.numbered) + 1) % self.every == 0:
                self.calls += 1
                self.dropped += [line for line in said if line not in self.dropped]
                return Reply(json.dumps({"memory": []}))
            return super().__call__(body)
        if user.startswith("Memories:") and "\nQuestion: " in user:
            memories, question = user.removeprefix("Memories:").split("\nQuestion: ", 1)
            asked = set(content(question.removesuffix("\nAnswer:")))
            texts = [line.split("] ", 1)[-1] for line in memories.splitlines() if line[:3] == "- ["]
            first = next((t for t in texts if asked & set(content(t))), "I don't know.")
            return Reply(first)
        if "\nGold answer: " in user and "\nGenerated answer: " in user:
            gold = user.split("\nGold answer: ", 1)[1].split("\nGenerated answer: ", 1)[0]
            prediction = user.split("\nGenerated answer: ", 1)[1]
            correct, why = offline_verdict(gold, prediction, self.f1_threshold)
            return Reply(judge_response(correct, why))
        return None
