"""A triple-store memory as plain functions, over a chat log with timestamps and speaker
prefixes ("[2023-06-02 09:14] Ana: I moved to Porto in 2019.").

``extract_triples`` keeps only sentences starting with "I" or "My" and writes each as a
``subject | predicate | object`` triple with the verb in its base form ("moved" -> "move", from
its own small table); ``forget_duplicates`` deletes an older triple with the same subject and
predicate (a "newer fact supersedes" rule); ``find`` ranks triples by exact word overlap with
the question (no stemming) and returns three; ``reply`` answers with the object of the first.
"""

from __future__ import annotations

import re
from pathlib import Path

from memtrace.tracing import (
    SimClock,
    Var,
    case,
    delete,
    edge,
    operation,
    read,
    session,
    trace,
    variable,
    write,
)
from usersystems import Run, mark

CONVERSATION = [
    ("d1", "[2023-06-02 09:14] Ana: I moved to Porto in 2019."),
    ("d2", "[2023-06-02 09:15] Ben: Did you like it there?"),
    ("d3", "[2023-06-02 09:16] Ana: I grew tomatoes on the balcony. The basil died though."),
    ("d4", "[2023-06-02 09:17] Ben: I bought a small sailing boat last week."),
    ("d5", '[2023-06-02 09:18] Ben: My grandmother always said "never buy a boat".'),
    ("d6", "[2023-06-09 19:40] Ana: I adopted a grey cat from the shelter."),
    ("d7", "[2023-06-09 19:41] Ana: Her name is Miso."),
    ("d8", "[2023-06-09 19:42] Ana: I moved my desk next to the window."),
    ("d9", "[2023-06-09 19:43] Ben: I took my niece sailing on Sunday."),
    ("d10", "[2023-06-09 19:44] Ben: I run every morning along the river."),
    ("d11", "[2023-06-09 19:45] Ana: I ran the Porto half marathon in 2 hours."),
    ("d12", "[2023-06-09 19:46] Ana: My brother works as a nurse in Braga."),
    ("d13", "[2023-06-09 19:47] Ben: We named the boat Gaivota."),
]

QUESTIONS = [
    ("t-q1", "Where did Ana move in 2019?", "Porto", "d1"),
    ("t-q2", "What did Ana grow on the balcony?", "tomatoes", "d3"),
    ("t-q3", "What did Ben buy last week?", "sailing boat", "d4"),
    ("t-q4", "What is Ana's cat called?", "Miso", "d7"),
    ("t-q5", "What did Ben's grandmother always say?", "never buy a boat", "d5"),
    ("t-q6", "Who did Ben take sailing on Sunday?", "niece", "d9"),
    ("t-q7", "How long did Ana take for the half marathon?", "2 hours", "d11"),
    ("t-q9", "What sport does Ben do every morning?", "running", "d10"),
    ("t-q10", "Where does Ana's sibling work?", "Braga", "d12"),
    ("t-q11", "What color is Ana's cat?", "grey", "d6"),
    ("t-q13", "What is the name of Ben's boat?", "Gaivota", "d13"),
    ("t-q14", "Who said never buy a boat?", "Ben's grandmother", "d5"),
]

TRUTH = {
    # "Ana | move | my desk ..." has Ana's subject and predicate: the Porto triple is deleted
    "t-q1": ("forget:d8", "DeletionError"),
    # "Her name is Miso." does not start with I / My: never extracted
    "t-q4": ("extract:d7", "ExtractionError"),
    # the triple is found first, but the answer is its object, "every morning along the river"
    "t-q9": ("reply:t-q9", "ResponseError"),
    # stored as "Ana | brother | works as a nurse in Braga": "sibling" and "work" match nothing
    "t-q10": ("find:t-q10", "RetrievalError"),
    # "We named ..." does not start with I / My: never extracted
    "t-q13": ("extract:d13", "ExtractionError"),
    # found first, but the answer is the object (the quote), not the subject
    "t-q14": ("reply:t-q14", "ResponseError"),
}

BASE_FORMS = {
    "moved": "move",
    "grew": "grow",
    "bought": "buy",
    "adopted": "adopt",
    "took": "take",
    "ran": "run",
    "said": "say",
    "works": "work",
}
_LINE = re.compile(r"^\[(?P<time>[^\]]+)\]\s+(?P<speaker>\w+):\s+(?P<text>.*)$")
_TOKEN = re.compile(r"[a-z0-9]+")
_IGNORED = frozenset(
    [
        "a",
        "the",
        "to",
        "in",
        "on",
        "of",
        "is",
        "did",
        "does",
        "do",
        "what",
        "where",
        "who",
        "how",
        "which",
    ]
)

steps: dict[str, str] = {}  # step -> op id, of the current run


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower())) - _IGNORED


def triple(speaker: str, sentence: str) -> str | None:
    sentence = sentence.rstrip(".")
    if sentence.startswith("I "):
        verb, _, rest = sentence[2:].partition(" ")
        rest = re.sub(r"\bmy\b", f"{speaker}'s", rest)
        return f"{speaker} | {BASE_FORMS.get(verb, verb)} | {rest}"
    if sentence.startswith("My "):
        words = sentence[3:].split(" ")
        if "is" in words:
            at = words.index("is")
            return f"{speaker} | {' '.join(words[:at])} | {' '.join(words[at + 1 :])}"
        return f"{speaker} | {words[0]} | {' '.join(words[1:])}"
    return None


@operation("triples.extract_triples", category="extraction")
def extract_triples(message_id: str, line: str) -> tuple[list[str], Var]:
    mark(steps, f"extract:{message_id}")
    message = variable(message_id, line, category="message")
    read(message)
    match = _LINE.match(line)
    found: list[str] = []
    if match:
        for sentence in re.split(r"(?<=[.!?])\s+", match["text"]):
            made = triple(match["speaker"], sentence)
            if made:
                found.append(made)
    return found, variable(
        f"triples:{message_id}", found, category="llm_response", sources=(message,)
    )


@operation("triples.forget_duplicates", category="deletion")
def forget_duplicates(message_id: str, store: dict[str, Var], new: list[str]) -> None:
    mark(steps, f"forget:{message_id}")
    for made in new:
        head = made.split(" | ")[:2]
        for text, var in list(store.items()):
            if text.split(" | ")[:2] == head:
                read(var)
                delete(var)
                del store[text]


@operation("triples.add_triples", category="embedding")
def add_triples(message_id: str, store: dict[str, Var], new: list[str], source: Var) -> None:
    mark(steps, f"add:{message_id}")
    read(source)
    for index, made in enumerate(new):
        var = variable(f"triple:{message_id}-{index}", made, category="memory")
        write(var)
        edge(source, var)
        store[made] = var


@operation("triples.find", category="retrieval")
def find(
    question_id: str, question: Var, text: str, store: dict[str, Var]
) -> tuple[list[str], Var]:
    mark(steps, f"find:{question_id}")
    read(question, *store.values())
    asked = tokens(text)
    ranked = sorted(store, key=lambda t: -len(asked & tokens(t)))[:3]
    context = variable(f"found:{question_id}", ranked, category="context")
    for made in ranked:
        edge(store[made], context)
    return ranked, context


@operation("triples.reply", category="generation")
def reply(question_id: str, question: Var, found: list[str], context: Var) -> Var:
    mark(steps, f"reply:{question_id}")
    read(question, context)
    answer = found[0].split(" | ")[2] if found else "I don't know"
    prediction = variable(f"answer:{question_id}", answer, class_name="prediction")
    edge(context, prediction)
    return prediction


def run(path: Path, trace_id: str) -> Run:
    steps.clear()
    outcome = Run(steps=steps)
    store: dict[str, Var] = {}
    with trace(path, trace_id, system="triples", clock=SimClock()):
        with session("chat"):
            for message_id, line in CONVERSATION:
                new, source = extract_triples(message_id, line)
                forget_duplicates(message_id, store, new)
                add_triples(message_id, store, new, source)
        with session("questions"):
            for question_id, text, gold, evidence in QUESTIONS:
                question = variable(question_id, text, class_name="query")
                found, context = find(question_id, question, text, store)
                prediction = reply(question_id, question, found, context)
                answer = found[0].split(" | ")[2] if found else ""
                outcome.predictions[question_id] = answer
                passed = gold.lower() in answer.lower()
                if not passed:
                    outcome.failed.add(question_id)
                case(
                    id=question_id,
                    query=question.id,
                    prediction=prediction.id,
                    golden_answers=[gold],
                    judge_score=float(passed),
                    evidence=[f"{evidence}@1"],
                )
    return outcome
