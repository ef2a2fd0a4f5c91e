"""The reference systems' prompts, recorded as `prompt` variables under the stable names an
optimizer rewrites. They are system messages (the backend sends the message, memories or facts
as the user turn), so they take no placeholders."""

from __future__ import annotations

from typing import Final

from memtrace.prompts import PROMPTS, Prompt

FACT_EXTRACTION = "fact-extraction-system-prompt"
UPDATE_DECISION = "memory-update-decision-prompt"
QUESTION_ANSWERING = "question-answering-prompt"
JUDGE = "locomo-judge-prompt"

_TEXTS: Final[dict[str, str]] = {
    FACT_EXTRACTION: (
        "You extract durable personal facts from one chat message. Return JSON "
        '{"facts": [...]}: each fact one self-contained sentence starting with the speaker\'s '
        "name, keeping names, places, dates and numbers exactly. Skip greetings, questions and "
        "small talk. Return an empty list when the message states no fact."
    ),
    UPDATE_DECISION: (
        "You maintain a memory store. Given a new fact and the most similar existing memories "
        '(id and text), return JSON {"actions": [{"event": "ADD"|"UPDATE"|"DELETE"|"NONE", '
        '"id": <memory id or null>, "text": <new memory text or null>}]}. ADD a new fact; '
        "UPDATE a memory when the fact refines or extends it (text = the merged memory); DELETE a "
        "memory the fact contradicts; NONE when the fact is already stored."
    ),
    QUESTION_ANSWERING: (
        "Answer the question from the memories below. Each memory has the date it was stored; "
        "resolve relative dates against it. Answer in a short phrase. If the memories do not "
        "hold the answer, give your best guess."
    ),
    JUDGE: (
        "Your task is to label an answer to a question as CORRECT or WRONG. You get a question, "
        "a gold answer and a generated answer. Be generous: the generated answer is CORRECT if "
        "it touches on the same topic or refers to the same date or period as the gold answer, "
        'even if it is longer. Otherwise it is WRONG. Return JSON {"reasoning": "<one '
        'sentence>", "label": "CORRECT" or "WRONG"}.'
    ),
}

DEFAULTS: Final[dict[str, Prompt]] = {
    name: PROMPTS.add(Prompt(name, 1, text)) for name, text in _TEXTS.items()
}
