"""memtrace.reading: key sentences, the lexical and the meaning reader, the one decision."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr

from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import CONFIDENCE_UNSURE, CaseView, OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.model import Anchor, CaseGraph, Evidence, FlowStep, Memory, OpRef
from memtrace.attribution.pipeline import Options, case_reader
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import linear
from memtrace.errors import ConfigError
from memtrace.llm import LLMClient
from memtrace.reading import LEXICAL, READERS, AutoReader, holds, make_reader
from memtrace.reading.copying import copies_words
from memtrace.reading.keys import key_sentences, specifics
from memtrace.reading.lexical import content_words
from memtrace.reading.meaning import OTHER, SAME, MeaningReader, installed
from memtrace.settings import LLMSettings, Settings
from memtrace.systems.evidence import key_sentence
from memtrace.systems.locomo import Question, Turn

GREETING = "Hey Jon, how are you doing?"
TOLD = "I launched an ad campaign to grow my store."


def test_a_greeting_to_the_other_speaker_is_not_the_key_sentence() -> None:
    message = f"{GREETING} {TOLD}"
    assert key_sentences(message, "What did Gina tell Jon?", ["she advertises"]) == [TOLD]


def test_a_place_the_question_names_is_what_a_sentence_tells() -> None:
    # "Oh, I've" opens with an exclamation, not an address: "I've" stays; and "Paris", the
    # place the question asks about, is told, not a greeting's name: the sentence is long
    # enough to be the key one, and the longer sentences about something else are not
    message = (
        "Hey Gina! Thanks for asking. I'm on the hunt for the ideal spot for my dance studio and"
        " it's been quite a journey! Oh, I've been to Paris yesterday! It was sooo cool."
    )
    assert key_sentences(message, "When was Jon in Paris?", ["28 January 2023"]) == [
        "Oh, I've been to Paris yesterday!"
    ]


def test_the_systems_provenance_follows_the_same_key_sentence() -> None:
    turn = Turn("D1:1", "Gina", f"{GREETING} {TOLD}")
    question = Question(1, "What did Gina tell Jon?", "she advertises", ("D1:1",), "1")
    assert key_sentence(question, turn) == 1


def test_a_name_the_answer_gives_counts_and_a_question_is_no_key_sentence() -> None:
    message = "Do you have pets? Luna and Oliver! They are sweet."
    assert key_sentences(message, "What are Melanie's pets' names?", ["Oliver, Luna, Bailey"]) == [
        "Luna and Oliver!"
    ]


def test_the_settings_offer_exactly_the_registered_readers() -> None:
    assert set(Settings.model_fields["reading"].annotation.__args__) == set(READERS)  # type: ignore[union-attr]


def test_an_unknown_reading_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown reading 'smell'"):
        make_reader("smell")


def test_lexical_reading_is_the_words() -> None:
    assert holds(LEXICAL, TOLD, ["Gina: I launched an ad campaign to grow my store"])
    assert not holds(LEXICAL, TOLD, ["Gina launched an advertising campaign to expand her shop"])
    assert LEXICAL.read(TOLD, []).sense == "lexical"


def _bag_encoder(vocabulary: Sequence[str]) -> object:
    """Unit vectors of which vocabulary words a text has: similarity by shared words, so the
    reader's thresholds and band are checked without the model."""

    def encode(texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            words = content_words(text)
            row = np.array([1.0 if w in words else 0.0 for w in vocabulary]) + 1e-9
            rows.append(row / np.linalg.norm(row))
        return np.asarray(rows)

    return encode


def test_meaning_decides_only_where_the_words_are_not_there_and_says_when_it_cannot_tell() -> None:
    vocabulary = sorted(content_words("launch ad campaign grow store advertis shop pottery dog"))
    reader = MeaningReader(_bag_encoder(vocabulary), model="bag")
    words = reader.read(TOLD, ["I launched an ad campaign to grow my store"])
    assert (words.held, words.sure, words.sense) == (True, True, "lexical")
    unrelated = reader.read(TOLD, ["Ana walks her dog"])
    assert (unrelated.held, unrelated.sure, unrelated.sense) == (False, True, "meaning:bag")
    # "launch ad campaign grow store" vs "campaign grow shop": similarity 2/sqrt(15) = 0.52,
    # in the band: held only when it keeps more than half of what the answer needs
    band = ["The campaign should grow the shop"]
    assert OTHER <= reader.read(TOLD, band).score < SAME
    assert reader.read(TOLD, band, frozenset({"campaign"})).held
    assert not reader.read(TOLD, band, frozenset({"ad", "launch"})).held
    assert not reader.read(TOLD, band, frozenset({"campaign"})).sure


def test_a_statement_without_a_name_or_number_the_sentence_tells_is_about_something_else() -> None:
    vocabulary = sorted(content_words("dog call biscuit rex neighbour"))
    reader = MeaningReader(_bag_encoder(vocabulary), model="bag")
    sentence = "My dog is called Biscuit."
    # 2 of its 3 words and similarity 2/sqrt(12) = 0.58 would hold it in the band: another dog
    other = reader.read(sentence, ["My neighbour's dog is called Rex."])
    assert (other.held, other.sure) == (False, True)
    assert reader.read(sentence, ["Ana's dog goes by Biscuit"]).held  # the name kept: it says it
    assert not reader.read("I ran 5 km today", ["I ran 10 km today"]).held


def test_the_names_and_numbers_a_sentence_tells() -> None:
    assert specifics("My dog is called Biscuit.") == {"biscuit"}
    # not the greeting's address, not a weekday a memory writer resolves into a date
    assert specifics("Hey Jon, I ran 5 km with Ana on Saturday!") == {"5", "ana"}


def test_in_the_band_a_statement_with_none_of_the_answer_words_does_not_hold_it() -> None:
    vocabulary = sorted(content_words("transgender story inspiring encouraging others"))
    reader = MeaningReader(_bag_encoder(vocabulary), model="bag")
    sentence = "The transgender stories were so inspiring!"
    # 2 of its 3 words, similarity 2/sqrt(12) = 0.58: in the band
    band = ["Our stories can be so inspiring and encouraging to others"]
    assert OTHER <= reader.read(sentence, band).score < SAME
    assert reader.read(sentence, band).held  # the answer's words unknown: its own words decide
    about_other_stories = reader.read(sentence, band, content_words("transgender woman"))
    assert (about_other_stories.held, about_other_stories.sure) == (False, False)


needs_model = pytest.mark.skipif(
    not installed(), reason="the extra sentence-transformers is not installed"
)


@needs_model
def test_the_packaged_model_reads_a_mem0_style_rewording() -> None:
    reader = make_reader("meaning")
    assert reader.name == "meaning:all-MiniLM-L6-v2"
    sentence = "Guess what, I signed up for a pottery class yesterday!"
    needs = content_words("7 May 2023")  # the gold answer, a date the memory resolved
    assert holds(reader, sentence, ["Melanie enrolled in a pottery course on 7 May 2023"], needs)
    assert not holds(reader, sentence, ["Jon is opening a dance studio downtown"], needs)


@needs_model
def test_paraphrased_runs_of_the_fixture_faults_are_attributed_as_the_verbatim_ones() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    spec = importlib.util.find_spec("paraphrase_judge")
    assert spec is not None
    import paraphrase_judge as bench

    fixture = json.loads((bench.FIXTURES / "cases.json").read_text(encoding="utf-8"))
    right = {variant: 0 for variant in bench.VARIANTS}
    total = 0
    reader = make_reader("meaning")
    for case in fixture["cases"]:
        for style in bench.STYLES:
            for fault, truth in fixture["faults"].items():
                total += 1
                for variant in bench.VARIANTS:
                    op, error_type, _ = bench.attribute(
                        bench.build(case, style, variant, fault), reader
                    )
                    right[variant] += op == bench.OPS[truth["op"]].id and error_type == fault
    assert right["verbatim"] / total >= 0.9 and right["paraphrased"] / total >= 0.9


# -- the hybrid judge asks the model what the reader cannot tell ---------------------------------

EXTRACT = OpRef("extract", 2, "extraction", "extract_facts")
ADD = OpRef("add", 3, "embedding", "add")
SEARCH = OpRef("search", 8, "retrieval", "search")
ANSWER = OpRef("answer", 9, "generation", "answer")
REWORDED = "The campaign should grow the shop"


def _reworded_case() -> CaseView:
    """The rewording reached the answer's context; the bag reader cannot tell it holds TOLD."""
    anchor = Anchor(
        "t", "c", "What did Gina do to grow her store?", ("launched an ad campaign",),
        "I don't know.", True, "q", ANSWER, (SEARCH,), ("m",),
    )  # fmt: skip
    memory = Memory("mem", 4, REWORDED, ADD, None, None, None, None)
    graph = CaseGraph(
        anchor, (Evidence("m", f"{GREETING} {TOLD}", seq=1),),
        (FlowStep("m", 0, EXTRACT, "m", "mem", REWORDED),), (memory,), (("ctx", REWORDED),),
        ((EXTRACT, "reads_evidence"), (SEARCH, "retrieval"), (ANSWER, "answer")),
    )  # fmt: skip
    vocabulary = sorted(content_words("launch ad campaign grow store advertis shop pottery dog"))
    reader = MeaningReader(_bag_encoder(vocabulary), model="bag")
    return CaseView(graph, tuple(trace_all(graph, reader)), {}, reader)


def _hybrid(server: FakeOpenAI) -> HybridJudge:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("sk-test"), model="m")
    client = LLMClient(settings, None)
    return HybridJudge(LLMJudge(client), client=client)


CONFIRM = json.dumps(
    {"faulty": True, "decisive": True, "error_type": "ResponseError", "reason": "it had it",
     "confidence": 0.9}
)  # fmt: skip
DENY = json.dumps({"faulty": False, "decisive": False, "reason": "fine", "confidence": 0.9})


def test_offline_an_unsure_reading_is_a_low_confidence_guess() -> None:
    view = _reworded_case()
    assert [t.sure for t in view.trails] == [False]
    found = linear(OfflineJudge(), view, candidates(view.graph, view.trails))
    assert (found.error_type, found.confidence) == ("ExtractionError", CONFIDENCE_UNSURE)
    assert "could not tell" in found.reason


def test_the_hybrid_judge_asks_whether_the_memory_holds_it_and_follows_the_answer(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply(content=json.dumps({"holds": True, "confidence": 0.9})),
        Reply(content=CONFIRM),
        Reply(content=DENY),
    )
    view = _reworded_case()
    found = _hybrid(fake_openai).decide("linear", view, candidates(view.graph, view.trails))
    assert (found.candidate and found.candidate.op.id, found.error_type) == (
        "answer",
        "ResponseError",
    )
    asked = json.dumps(fake_openai.chat_requests[0].body)
    assert TOLD in asked and REWORDED in asked and "campaign" in asked
    assert found.usage.calls == 3  # the reading question, the proposal, its rival


def test_a_failed_reading_question_leaves_the_readers_guess(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*[Reply(status=400, content="bad request")] * 4)
    view = _reworded_case()
    found = _hybrid(fake_openai).decide("linear", view, candidates(view.graph, view.trails))
    assert found.error_type == "ExtractionError" and found.confidence == CONFIDENCE_UNSURE


# -- auto: the words where a trace's memories copy its messages ---------------------------------


def test_a_store_of_verbatim_turns_copies_its_messages_words_a_store_of_facts_rewrites_them() -> (
    None
):
    messages = [f"{GREETING} {TOLD}", "My dog is called Biscuit and he loves the park."]
    gina = "Gina: I launched an ad campaign to grow my store."
    assert copies_words([gina, "Ana: My dog is called Biscuit and he loves the park."], messages)
    assert not copies_words([gina, "Ana's dog Biscuit enjoys parks"], messages)  # half of them
    assert not copies_words(["Gina advertises her shop", "Ana's dog is Biscuit"], messages)
    assert copies_words([], messages) is None and copies_words([gina], ["Hi!"]) is None


def test_auto_reads_a_trace_that_copies_its_messages_by_their_words() -> None:
    """Jon's turn is copied into the store; Gina's, the evidence, was dropped. The meaning reader
    takes Jon's copy for Gina's sentence (in the band, it keeps the answer's word): stored, so a
    RetrievalError. The trace's memories copy its messages: auto reads it by the words, and the
    extraction that dropped Gina's sentence is blamed."""
    said = "Contemporary dance is so expressive and graceful."
    jons = "Contemporary is my top pick, so expressive and powerful."
    anchor = Anchor(
        "t", "c", "What is Gina's favourite style of dance?", ("Contemporary",), "Hip-hop", True,
        "q", ANSWER, (SEARCH,), ("m",),
    )  # fmt: skip
    copy = Memory("jon", 1, f"Jon: {jons}", ADD, None, None, None, None)
    graph = CaseGraph(
        anchor, (Evidence("m", said, seq=2),), (FlowStep("m", 0, EXTRACT, "m", "facts", "[]"),),
        (copy,), (), ((EXTRACT, "reads_evidence"), (SEARCH, "retrieval"), (ANSWER, "answer")),
        copied=copies_words([copy.value], [jons, said]),
    )  # fmt: skip
    vocabulary = sorted(content_words("contemporary dance expressive graceful powerful"))
    meaning = MeaningReader(_bag_encoder(vocabulary), model="bag")

    def verdict(options: Options) -> tuple[str | None, str | None]:
        trails = trace_all(graph, case_reader(options, graph))
        found = linear(OfflineJudge(), CaseView(graph, tuple(trails)), candidates(graph, trails))
        return (found.candidate.op.id if found.candidate else None), found.error_type

    assert verdict(Options(reader=meaning)) == ("search", "RetrievalError")
    auto = AutoReader(meaning)
    assert case_reader(Options(reader=auto), graph) is LEXICAL
    assert verdict(Options(reader=auto)) == ("extract", "ExtractionError")
    # a trace whose memories rewrite its messages, or one with nothing to compare, reads meaning
    assert auto.for_trace(False) is meaning and auto.for_trace(None) is meaning
    assert auto.read(said, [copy.value]).sense == "meaning:bag"  # a text read without its trace


@needs_model
def test_auto_is_the_per_trace_choice_where_the_extra_is_installed() -> None:
    auto = make_reader("auto")
    assert isinstance(auto, AutoReader) and auto.for_trace(True) is LEXICAL
    assert auto.for_trace(False).name == "meaning:all-MiniLM-L6-v2"


def test_the_model_loads_at_the_first_text_words_cannot_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import memtrace.reading.meaning as meaning_module

    loads: list[str] = []

    def not_loadable() -> object:
        loads.append("model")
        raise ConfigError("the model was loaded")

    monkeypatch.setattr(meaning_module, "installed", lambda: True)
    monkeypatch.setattr(meaning_module, "_packaged_model", not_loadable)
    reader = MeaningReader.packaged()  # constructing it loads nothing
    assert reader.read(TOLD, [f"Gina: {TOLD}"]).held and loads == []  # the words decided
    with pytest.raises(ConfigError, match="the model was loaded"):
        reader.read(TOLD, ["Gina launched an advertising campaign to expand her shop"])
    assert loads == ["model"]


def test_meaning_without_its_extra_is_said_before_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    import memtrace.reading.meaning as meaning_module

    monkeypatch.setattr(meaning_module, "installed", lambda: False)
    with pytest.raises(ConfigError, match=r"memtrace-graph\[sentence-transformers\]"):
        make_reader("meaning")
