"""LoCoMo-format input: conversations with dated sessions and questions with evidence.

Schema (snap-research/locomo): a JSON list of samples ``{sample_id, conversation: {speaker_a,
speaker_b, session_N: [{speaker, dia_id, text}], session_N_date_time}, qa: [{question, answer,
evidence: [dia_id], category}]}``. Category 5 (adversarial) questions have no ``answer`` and are
skipped: the reference systems are not built to abstain.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memtrace.errors import InputError

CATEGORIES: Final[dict[int, str]] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
SAMPLE_PATH: Final[Path] = Path(__file__).parent / "sample" / "locomo_sample.json"
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    number: int  # 1-based position in the sample's qa list
    text: str
    answer: str
    evidence: tuple[str, ...]
    category: str


@dataclass(frozen=True, slots=True)
class Conversation:
    number: int  # 1-based position in the file
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def turns(self) -> dict[str, Turn]:
        return {t.dia_id: t for s in self.sessions for t in s.turns}


@dataclass(frozen=True, slots=True)
class Subset:
    """Which conversations (1-based numbers or sample ids), sessions and questions to run."""

    conversations: tuple[str, ...] = ()
    sessions: tuple[int, ...] = ()
    questions: int | None = None  # the first N answerable questions of each conversation


def _field(data: dict[str, Any], key: str, kind: type, path: str, where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise InputError(path, f"{where}.{key}", f"expected {kind.__name__}, got {value!r:.60}")
    return value


def _session(conv: dict[str, Any], number: int, path: str, where: str) -> Session:
    turns = []
    for i, raw in enumerate(_field(conv, f"session_{number}", list, path, where)):
        at = f"{where}.session_{number}[{i}]"
        if not isinstance(raw, dict):
            raise InputError(path, at, "a turn must be an object")
        turns.append(
            Turn(
                dia_id=_field(raw, "dia_id", str, path, at),
                speaker=_field(raw, "speaker", str, path, at),
                text=_field(raw, "text", str, path, at),
            )
        )
    date = conv.get(f"session_{number}_date_time")
    return Session(number, date if isinstance(date, str) else "", tuple(turns))


def _questions(sample: dict[str, Any], path: str, where: str) -> tuple[Question, ...]:
    out = []
    for i, raw in enumerate(_field(sample, "qa", list, path, where), start=1):
        at = f"{where}.qa[{i - 1}]"
        if not isinstance(raw, dict):
            raise InputError(path, at, "a question must be an object")
        category = raw.get("category")
        if category == 5 or "answer" not in raw:
            continue
        if category not in CATEGORIES:
            raise InputError(path, f"{at}.category", f"unknown category {category!r}")
        evidence = raw.get("evidence", [])
        if not isinstance(evidence, list):
            raise InputError(path, f"{at}.evidence", "expected a list of dia_ids")
        out.append(
            Question(
                number=i,
                text=_field(raw, "question", str, path, at),
                answer=str(raw["answer"]),
                # LoCoMo has a few malformed ids ("D8:6; D9:17"): split them, keep the rest
                evidence=tuple(
                    e for item in evidence for e in re.split(r"[;,\s]+", str(item)) if e
                ),
                category=CATEGORIES[category],
            )
        )
    return tuple(out)


def load_locomo(path: Path, subset: Subset = Subset()) -> list[Conversation]:
    name = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(name, None, f"cannot read file: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(name, f"line {exc.lineno}", f"malformed JSON: {exc.msg}") from None
    if not isinstance(data, list):
        raise InputError(name, None, "expected a JSON list of LoCoMo samples")
    wanted = set(subset.conversations)
    out = []
    for n, sample in enumerate(data, start=1):
        where = f"[{n - 1}]"
        if not isinstance(sample, dict):
            raise InputError(name, where, "a sample must be an object")
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        if wanted and str(n) not in wanted and sample_id not in wanted:
            continue
        conv = _field(sample, "conversation", dict, name, where)
        at = f"{where}.conversation"
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
        if subset.sessions:
            numbers = [s for s in numbers if s in subset.sessions]
        questions = _questions(sample, name, where)
        out.append(
            Conversation(
                number=n,
                sample_id=sample_id,
                speakers=(
                    _field(conv, "speaker_a", str, name, at),
                    _field(conv, "speaker_b", str, name, at),
                ),
                sessions=tuple(_session(conv, s, name, at) for s in numbers),
                questions=questions[: subset.questions] if subset.questions else questions,
            )
        )
    missing = wanted - {str(c.number) for c in out} - {c.sample_id for c in out}
    if missing:
        raise InputError(name, None, f"no conversation {', '.join(sorted(missing))} in the file")
    return out
