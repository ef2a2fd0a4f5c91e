"""Generate the shipped LoCoMo-format sample (original template text, not LoCoMo data).

    python -m memtrace.systems.sample.generate [--conversations 3] [--seed 7] [--out PATH]

Each conversation is two people chatting over dated sessions. Every fact message is planted
from a template together with the questions it answers (single-hop and temporal, with the
message as evidence), between filler small talk. Same seed, same file.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

PEOPLE = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Greta", "Hugo", "Iris", "Jonas"]
FILLER = [
    "That sounds wonderful, tell me more!",
    "Haha, I know exactly what you mean.",
    "How has your week been so far?",
    "Wow, good for you!",
    "I'm glad things are going well.",
    "Thanks for sharing that with me.",
]
# (message template, [(question template, answer template, category)], slot choices)
FACTS: list[tuple[str, list[tuple[str, str, int]], dict[str, list[str]]]] = [
    (
        "I adopted a {animal} named {pet} yesterday. {pet} already loves the park.",
        [
            ("What is the name of {who}'s {animal}?", "{pet}", 4),
            ("When did {who} adopt a {animal}?", "{yesterday}", 2),
        ],
        {"animal": ["puppy", "kitten", "rabbit"], "pet": ["Biscuit", "Pepper", "Mochi", "Ziggy"]},
    ),
    (
        "I started working as a {job} at a {place} last week.",
        [
            ("What job did {who} start?", "{job}", 4),
            ("When did {who} start working at the {place}?", "The week before {today}", 2),
        ],
        {
            "job": ["nurse", "baker", "translator", "carpenter"],
            "place": ["hospital", "bakery", "publishing house", "workshop"],
        },
    ),
    (
        "My sister {sibling} is visiting from {city} next month.",
        [
            ("Where does {who}'s sister live?", "{city}", 4),
            ("What is the name of {who}'s sister?", "{sibling}", 4),
        ],
        {"sibling": ["Maya", "Lena", "Rosa", "Nadia"], "city": ["Porto", "Oslo", "Kyoto", "Quito"]},
    ),
    (
        "I finally finished reading {book}. It made me cry at the end.",
        [("Which book did {who} finish reading?", "{book}", 4)],
        {"book": ["The Silent Harbor", "Paper Moons", "A Year of Rain", "Glass Orchard"]},
    ),
    (
        "I signed up for a {hobby} class last Saturday.",
        [
            ("What class did {who} sign up for?", "{hobby}", 4),
            ("When did {who} sign up for the {hobby} class?", "The saturday before {today}", 2),
        ],
        {"hobby": ["pottery", "salsa", "watercolor", "climbing"]},
    ),
    (
        "I ran a {distance} race for the children's hospital two days ago.",
        [
            ("How long was the race {who} ran?", "{distance}", 4),
            ("Who did {who}'s race raise money for?", "the children's hospital", 3),
        ],
        {"distance": ["5k", "10k", "half marathon"]},
    ),
]


def _day(d: date) -> str:
    return f"{d.day} {d:%B} {d.year}"


def conversation(rng: random.Random, number: int) -> dict[str, Any]:
    a, b = rng.sample(PEOPLE, 2)
    start = date(2023, 3, 1) + timedelta(days=rng.randrange(60))
    conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    qa: list[dict[str, Any]] = []
    facts = rng.sample(FACTS, len(FACTS))
    for s in range(1, 5):
        day = start + timedelta(days=14 * (s - 1) + rng.randrange(5))
        conv[f"session_{s}_date_time"] = (
            f"{rng.randrange(1, 12)}:{rng.randrange(60):02d} pm on {day.day} {day:%B}, {day.year}"
        )
        turns: list[dict[str, str]] = []
        planted = facts[(s - 1) * 3 // 2 : s * 3 // 2]
        for t in range(8):
            speaker = (a, b)[t % 2]
            text = rng.choice(FILLER)
            if t in (2, 5) and planted:
                template, questions, slots = planted.pop(0)
                values = {k: rng.choice(v) for k, v in slots.items()}
                values |= {
                    "who": speaker,
                    "today": _day(day),
                    "yesterday": _day(day - timedelta(days=1)),
                }
                text = template.format(**values)
                for q, answer, category in questions:
                    qa.append(
                        {
                            "question": q.format(**values),
                            "answer": answer.format(**values),
                            "evidence": [f"D{s}:{t + 1}"],
                            "category": category,
                        }
                    )
            turns.append({"speaker": speaker, "dia_id": f"D{s}:{t + 1}", "text": text})
        conv[f"session_{s}"] = turns
    return {"sample_id": f"sample-{number}", "conversation": conv, "qa": qa}


def generate(conversations: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [conversation(rng, n) for n in range(1, conversations + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("locomo_sample.json"))
    args = parser.parse_args()
    data = generate(args.conversations, args.seed)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
