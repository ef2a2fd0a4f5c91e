"""The LLM boundary: one small client over the official ``openai`` package.

Works with any OpenAI-compatible endpoint (``settings.llm``). What it adds to the raw client:

* structured output: the endpoint is asked for JSON matching the reply model (``response_format``
  with a JSON schema; where refused, a JSON object; where that is refused too, plain text), the
  mode detected once per endpoint and model and remembered (in memory and beside the cache), said
  on the ``memtrace.llm`` logger (``memtrace --verbose``); a reply is parsed and validated
  against the pydantic model (missing fields that have defaults take them); an invalid reply is
  answered once with the validation error and a request to fix it, then ``LLMError``;
* bounded retries with exponential backoff (honouring ``Retry-After``) on 429, 5xx, timeouts and
  connection errors; other HTTP errors fail at once;
* an on-disk cache keyed by endpoint (``base_url``) + model + the full request, so a re-run makes
  zero calls and another server is never served this one's replies;
* ``Usage`` accounting (calls, cache hits, tokens) that callers sum per case;
* ``run_concurrently`` for many independent calls with a bounded number of threads.

Errors are ``LLMError`` with the endpoint and status; the API key is never part of a message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, get_args

import openai
from pydantic import BaseModel, ValidationError

from memtrace.errors import LLMError
from memtrace.settings import LLMSettings, Settings
from memtrace.usage import Usage as Usage  # re-exported: callers count usage from here

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
R = TypeVar("R")

Message = dict[str, str]

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

log = logging.getLogger(__name__)

# How to ask an endpoint for JSON, most specific first. An endpoint that refuses one (HTTP 400 or
# 422, or any error that names response_format) is asked the next way; the first that works is
# kept for endpoint + model.
OutputMode = Literal["json_schema", "json_object", "text"]
OUTPUT_MODES: tuple[OutputMode, ...] = get_args(OutputMode)
MODES_FILE = "output-modes.json"
_REFUSED_STATUSES = frozenset({400, 422})
_modes_lock = threading.Lock()
_known_modes: dict[str, OutputMode] = {}  # "base_url model" -> mode, shared by all clients


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage


@dataclass(frozen=True)
class Structured(Generic[M]):
    value: M
    usage: Usage


@dataclass(frozen=True)
class Embeddings:
    vectors: list[list[float]]
    usage: Usage


class ResponseCache:
    """One JSON file per request hash; writes are atomic so concurrent runs never see half files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(payload: dict[str, Any]) -> str:
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: Any) -> None:
        _write_json(self._path(key), value)


class OutputModes:
    """Which output mode each endpoint + model answers, remembered for every client of the
    process and, with a cache directory, in ``MODES_FILE`` beside the cache for later runs."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def get(self, key: str) -> OutputMode | None:
        with _modes_lock:
            mode = _known_modes.get(key)
            if mode is None and self.path is not None:
                value = self._stored().get(key)
                if value in OUTPUT_MODES:
                    mode = _known_modes[key] = value
            return mode

    def put(self, key: str, mode: OutputMode) -> None:
        with _modes_lock:
            _known_modes[key] = mode
            if self.path is not None:
                _write_json(self.path, {**self._stored(), key: mode})

    def _stored(self) -> dict[str, Any]:
        assert self.path is not None
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return stored if isinstance(stored, dict) else {}


def _write_json(path: Path, value: Any) -> None:
    """Atomically, so that concurrent runs never read half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle, ensure_ascii=False)
    os.replace(tmp, path)


def _format_complaint(exc: BaseException | None) -> bool:
    """An error response about the request's response_format, whatever its status: llama.cpp's
    Python server answers an unknown format with HTTP 500 and a validation error."""
    return isinstance(exc, openai.APIStatusError) and "response_format" in str(exc.message)


def _retryable(exc: Exception) -> bool:
    if _format_complaint(exc):
        return False  # the same request would be refused again
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError)  # includes APITimeoutError


def _retry_after(exc: Exception) -> float | None:
    if isinstance(exc, openai.APIStatusError):
        value = exc.response.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None
    return None


def schema_hint(model: type[BaseModel]) -> str:
    """A compact JSON shape of ``model`` for the prompt: field names, types, allowed values.

    The full JSON Schema (titles, descriptions, $defs) costs several times the tokens and tells a
    model no more; the schema itself goes in ``response_format`` where the endpoint takes it.
    """
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})

    def shape(prop: dict[str, Any]) -> str:
        if "$ref" in prop:
            prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
        if "enum" in prop:
            return " | ".join(json.dumps(v) for v in prop["enum"])
        if "anyOf" in prop:
            return " | ".join(shape(p) for p in prop["anyOf"])
        kind = str(prop.get("type", "any"))
        if kind == "number" and "minimum" in prop and "maximum" in prop:
            return f"number {prop['minimum']}..{prop['maximum']}"
        return kind

    required = set(schema.get("required", ()))
    fields = [
        f'"{name}": {shape(prop)}{"" if name in required else " (optional)"}'
        for name, prop in schema.get("properties", {}).items()
    ]
    return "{" + ", ".join(fields) + "}"


def _response_format(mode: OutputMode, model: type[BaseModel]) -> dict[str, Any] | None:
    if mode == "json_schema":
        schema = {"name": model.__name__, "schema": model.model_json_schema(), "strict": False}
        return {"type": "json_schema", "json_schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _refused(exc: LLMError) -> bool:
    """Whether the endpoint turned the request down as malformed (not overloaded, not down)."""
    cause = exc.__cause__
    if _format_complaint(cause):
        return True
    return isinstance(cause, openai.APIStatusError) and cause.status_code in _REFUSED_STATUSES


def parse_json_reply(text: str, model: type[M]) -> M:
    """Parse a reply (optionally in a ```json fence) and validate it; raises ValueError."""
    match = _FENCE.match(text)
    body = match.group(1) if match else text.strip()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise ValueError(
            f"reply does not match the schema: {exc.errors(include_url=False)}"
        ) from exc


class LLMClient:
    """A synchronous, thread-safe client; share one instance between threads."""

    def __init__(
        self,
        settings: LLMSettings,
        cache_dir: Path | None = None,
        *,
        max_retries: int = 4,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 20.0,
        output_mode: OutputMode | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not settings.base_url:
            raise LLMError(
                "no LLM endpoint configured: set OPENAI_BASE_URL (and OPENAI_API_KEY) "
                "or [llm] base_url in settings.toml"
            )
        self.model = settings.model
        self.base_url = settings.base_url
        self._key = settings.api_key.get_secret_value() if settings.api_key else "none"
        # Our own retry loop (below) knows which failures are worth a retry; the client's is off.
        self._client = openai.OpenAI(
            api_key=self._key,
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=0,
        )
        self.timeout_seconds = settings.timeout_seconds
        self.concurrency = settings.concurrency
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._output_mode = output_mode  # None: detect (once per endpoint and model)
        self._modes = OutputModes(cache_dir / MODES_FILE if cache_dir is not None else None)
        self._probe_lock = threading.Lock()
        self._sleep = sleep

    @classmethod
    def from_settings(cls, settings: Settings, *, cache: bool = True, **kwargs: Any) -> LLMClient:
        cache_dir = settings.home / "llm-cache" if cache else None
        return cls(settings.llm, cache_dir, **kwargs)

    # -- public calls -------------------------------------------------------------------------

    def complete(
        self, prompt: str | Sequence[Message], *, system: str | None = None, **options: Any
    ) -> Completion:
        """A plain text completion. ``options`` go to the API (temperature, max_tokens, ...)."""
        return self._chat(_messages(prompt, system), options)

    def complete_json(
        self,
        prompt: str | Sequence[Message],
        model: type[M],
        *,
        system: str | None = None,
        **options: Any,
    ) -> Structured[M]:
        """A completion parsed into ``model``; one repair round on invalid output."""
        instruction = f"Reply with one JSON object only, of this shape: {schema_hint(model)}"
        messages = _messages(prompt, f"{system}\n\n{instruction}" if system else instruction)
        # The cache holds the validated reply under the request without its response_format, so
        # a re-run is free whichever mode the endpoint needed, even after a repair round.
        payload = {
            "endpoint": "chat",
            "model": self.model,
            "messages": messages,
            "reply": model.__name__,
            **options,
        }
        cached = self._cache_get(payload)
        if cached is not None:
            return Structured(parse_json_reply(cached["text"], model), Usage(cache_hits=1))
        first, mode = self._chat_structured(messages, model, options)
        try:
            value = parse_json_reply(first.text, model)
            usage = first.usage
            text = first.text
        except ValueError as exc:
            repair = [
                *messages,
                {"role": "assistant", "content": first.text},
                {
                    "role": "user",
                    "content": f"That reply was invalid ({str(exc)[:500]}). {instruction}",
                },
            ]
            second = self._chat(repair, _with_format(options, mode, model), cache=False)
            usage = first.usage + second.usage
            text = second.text
            try:
                value = parse_json_reply(text, model)
            except ValueError as again:
                raise LLMError(
                    f"{self.base_url}: model {self.model} returned invalid JSON twice: {again}",
                    usage=usage,
                ) from again
        self._cache_put(payload, {"text": text})
        return Structured(value, usage)

    def output_mode(self) -> OutputMode:
        """How this endpoint + model is asked for JSON (detected on the first structured call)."""
        return self._output_mode or self._remembered_mode() or OUTPUT_MODES[0]

    def _chat_structured(
        self, messages: list[Message], model: type[BaseModel], options: dict[str, Any]
    ) -> tuple[Completion, OutputMode]:
        """Ask in the remembered mode; the first time, step down the modes the endpoint refuses."""
        known = self._output_mode or self._remembered_mode()
        if known is None:
            # One thread probes; the others wait for its answer instead of probing too.
            with self._probe_lock:
                known = self._remembered_mode()
                if known is None:
                    return self._probe(messages, model, options)
        return self._chat(messages, _with_format(options, known, model), cache=False), known

    def _probe(
        self, messages: list[Message], model: type[BaseModel], options: dict[str, Any]
    ) -> tuple[Completion, OutputMode]:
        """Step down the modes the endpoint refuses; remember the first that answers."""
        refused = Usage()
        for mode in OUTPUT_MODES:
            try:
                completion = self._chat(messages, _with_format(options, mode, model), cache=False)
            except LLMError as exc:
                if mode == OUTPUT_MODES[-1] or not _refused(exc):
                    exc.usage = refused + (exc.usage or Usage())
                    raise
                refused = refused + Usage(calls=1)
                following = OUTPUT_MODES[OUTPUT_MODES.index(mode) + 1]
                log.info(
                    "%s (model %s) refused response_format %s (%s); trying %s",
                    self.base_url,
                    self.model,
                    mode,
                    exc,
                    following,
                )
                continue
            self._remember_mode(mode)
            return Completion(completion.text, refused + completion.usage), mode
        raise AssertionError("unreachable: the last mode either answers or raises")

    def _mode_key(self) -> str:
        return f"{self.base_url} {self.model}"

    def _remembered_mode(self) -> OutputMode | None:
        return self._modes.get(self._mode_key())

    def _remember_mode(self, mode: OutputMode) -> None:
        log.info("%s (model %s): structured output via %s", self.base_url, self.model, mode)
        self._modes.put(self._mode_key(), mode)

    def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        """Embeddings for ``texts`` (one request; cached as a whole)."""
        name = model or self.model
        payload = {"endpoint": "embeddings", "model": name, "input": list(texts)}
        cached = self._cache_get(payload)
        if cached is not None:
            return Embeddings(cached["vectors"], Usage(cache_hits=1))

        def call() -> Any:
            return self._client.embeddings.create(model=name, input=list(texts))

        response = self._with_retries(call)
        vectors = [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
        tokens = response.usage.prompt_tokens if response.usage else 0
        self._cache_put(payload, {"vectors": vectors})
        return Embeddings(vectors, Usage(calls=1, tokens_in=tokens))

    # -- internals ------------------------------------------------------------------------------

    def _chat(
        self, messages: list[Message], options: dict[str, Any], *, cache: bool = True
    ) -> Completion:
        payload = {"endpoint": "chat", "model": self.model, "messages": messages, **options}
        cached = self._cache_get(payload) if cache else None
        if cached is not None:
            return Completion(cached["text"], Usage(cache_hits=1))

        def call() -> Any:
            return self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                **options,
            )

        response = self._with_retries(call)
        if not response.choices:
            raise LLMError(f"{self.base_url}: model {self.model} returned no choices")
        text = response.choices[0].message.content or ""
        usage = response.usage
        spent = Usage(
            calls=1,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
        )
        if cache:
            self._cache_put(payload, {"text": text})
        return Completion(text, spent)

    def _with_retries(self, call: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                with self._slots:  # at most `concurrency` requests in flight, whoever sends them
                    return call()
            except openai.OpenAIError as exc:
                if not _retryable(exc) or attempt >= self.max_retries:
                    raise self._error(exc, attempt) from exc
                delay = min(self.backoff_seconds * 2**attempt, self.max_backoff_seconds)
                hinted = _retry_after(exc)
                self._sleep(min(hinted, self.max_backoff_seconds) if hinted else delay)
                attempt += 1

    def _error(self, exc: Exception, retries: int) -> LLMError:
        hint = ""
        if isinstance(exc, openai.APITimeoutError):
            what = "timed out"
            hint = (
                f" (no answer within {self.timeout_seconds:g} s; a slow or single-slot server "
                f"needs a longer --llm-timeout / MEMTRACE_LLM_TIMEOUT, or fewer requests at once: "
                f"--llm-concurrency / MEMTRACE_LLM_CONCURRENCY, now {self.concurrency})"
            )
        elif isinstance(exc, openai.APIStatusError):
            what = f"HTTP {exc.status_code}: {exc.message}"
        elif isinstance(exc, openai.APIConnectionError):
            what = f"connection failed: {exc}"
        else:
            what = f"{type(exc).__name__}: {exc}"
        after = f" after {retries} retries" if retries else ""
        message = f"LLM request to {self.base_url} (model {self.model}) {what}{after}{hint}"
        if self._key and self._key != "none":
            message = message.replace(self._key, "***")
        return LLMError(message, usage=Usage(calls=retries + 1))

    def _cache_key(self, payload: dict[str, Any]) -> str:
        # Two servers may serve one model name with different replies (a second scripted
        # server, a re-deployed model): a reply is cached for the endpoint that gave it.
        return ResponseCache.key({**payload, "base_url": self.base_url})

    def _cache_get(self, payload: dict[str, Any]) -> Any | None:
        return self.cache.get(self._cache_key(payload)) if self.cache else None

    def _cache_put(self, payload: dict[str, Any], value: Any) -> None:
        if self.cache:
            self.cache.put(self._cache_key(payload), value)


def _with_format(
    options: dict[str, Any], mode: OutputMode, model: type[BaseModel]
) -> dict[str, Any]:
    response_format = _response_format(mode, model)
    return {"response_format": response_format, **options} if response_format else options


def _messages(prompt: str | Sequence[Message], system: str | None) -> list[Message]:
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    return [{"role": "system", "content": system}, *messages] if system else messages


def run_concurrently(
    work: Callable[[T], R], items: Sequence[T], max_workers: int = 8
) -> list[R | LLMError]:
    """Apply ``work`` to every item with at most ``max_workers`` in flight, keeping order.

    An ``LLMError`` becomes that item's result so one failure does not stop the others.
    """

    def guarded(item: T) -> R | LLMError:
        try:
            return work(item)
        except LLMError as exc:
            return exc

    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
        return list(pool.map(guarded, items))
