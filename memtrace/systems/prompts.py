"""The reference systems' prompts, recorded as `prompt` variables under the stable names an
optimizer rewrites. They are system messages (the backend sends the message, memories or facts
as the user turn), so they take no placeholders."""

from __future__ import annotations

from typing import Final

from memtrace.integrations.mem0_v2 import CUSTOM_INSTRUCTIONS_NAME
from memtrace.prompts import PROMPTS, Prompt

FACT_EXTRACTION = "fact-extraction-system-prompt"
UPDATE_DECISION = "memory-update-decision-prompt"
QUESTION_ANSWERING = "question-answering-prompt"
JUDGE = "locomo-judge-prompt"
EVERMEMOS_BOUNDARY = "evermemos-boundary-prompt"
EVERMEMOS_EPISODE = "evermemos-episode-prompt"
EVERMEMOS_EVENT_LOG = "evermemos-event-log-prompt"
EVERMEMOS_SUFFICIENCY = "evermemos-sufficiency-prompt"
EVERMEMOS_REFINE = "evermemos-query-refinement-prompt"
EVERMEMOS_ANSWER = "evermemos-answer-prompt"
# mem0ai 2.x's ``custom_instructions``: Mem0 appends them to its own extraction prompt (which is
# Mem0's, not ours to rewrite); the mem0-lib system passes this text in Mem0's config
MEM0_CUSTOM_INSTRUCTIONS = CUSTOM_INSTRUCTIONS_NAME

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
    EVERMEMOS_BOUNDARY: (
        "You segment a chat into episodes. You get the messages of the episode so far (with "
        "dates), one new message and how much time passed before it. Decide whether the episode "
        "so far is complete, so that the new message starts another one: a change of subject, a "
        "long pause or a new meeting ends it; a reply, a follow-up or small talk on the same "
        'subject does not. Return JSON {"reasoning": "<one sentence>", "should_end": true or '
        'false, "confidence": <0..1>, "topic_summary": "<the episode so far in a few words>"}.'
    ),
    EVERMEMOS_EPISODE: (
        'You write the memory of one episode of a chat. Return JSON {"title": <a short '
        'subject line>, "content": <a third-person narrative of what was said>}. Name who '
        "said what, keep names, places, dates and numbers exactly, and leave nothing out that "
        "a later question could ask about. Write dates as absolute dates when the messages "
        "give them relative to their own date."
    ),
    EVERMEMOS_EVENT_LOG: (
        'You list the atomic facts of one episode of a chat. Return JSON {"time": <the '
        'date of the episode>, "atomic_fact": [...]}: each fact one short self-contained '
        "sentence naming its subject, with relative times resolved against the message date. "
        "Give at least one fact."
    ),
    EVERMEMOS_SUFFICIENCY: (
        "You check whether retrieved memories are enough to answer a question. You get the "
        "question and the memories (date, title and episode). Return JSON "
        '{"is_sufficient": true or false, "reasoning": "<one sentence>", '
        '"key_information_found": [...], "missing_information": [...]}.'
    ),
    EVERMEMOS_REFINE: (
        "Retrieved memories did not answer a question. You get the question, the memories and "
        "what is missing. Write two or three different search queries that would find the "
        "missing memories (other words, the people and things involved). Return JSON "
        '{"queries": [...]}.'
    ),
    MEM0_CUSTOM_INSTRUCTIONS: (
        "Write each memory as one self-contained sentence that names the speaker and keeps "
        "names, places, dates and numbers exactly as said."
    ),
    EVERMEMOS_ANSWER: (
        "Answer the question from the episodes below; each has the date it happened and a "
        "title. Resolve relative dates against the episode's date. Answer in a short phrase. "
        "If the episodes do not hold the answer, give your best guess."
    ),
}

DEFAULTS: Final[dict[str, Prompt]] = {
    name: PROMPTS.add(Prompt(name, 1, text)) for name, text in _TEXTS.items()
}
# The prompts an optimizer may rewrite unless a system names its own (``System.tunable_prompts``).
# The judge's prompt is never one: loosening the judge "improves" accuracy.
TUNABLE_PROMPTS: Final = (FACT_EXTRACTION, UPDATE_DECISION, QUESTION_ANSWERING)
