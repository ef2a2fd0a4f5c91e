"""memtrace.reading: key sentences, the lexical and the meaning reader, the one decision."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
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
from memtrace.reading.copying import Copying
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


def _bag_encoder(vocabulary: Sequence[str]) -> Callable[[Sequence[str]], np.ndarray]:
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


# -- auto: per statement, the words where it copies a message sentence, else meaning ------------


def test_a_statement_copies_a_message_sentence_word_for_word_a_rewrite_copies_none() -> None:
    copying = Copying.of(
        [(f"{GREETING} {TOLD}", 1), ("Wow, love that painting!", 2)], speakers=["Melanie"]
    )
    assert copying is not None
    assert copying.copies(content_words(f"Gina: {TOLD}"))
    assert not copying.copies(content_words("Gina launched an advertising campaign"))
    # a short sentence (a rewording keeps it whole too) only word for word, give or take who
    # said it and when (a store's "[date] speaker: turn"); another name is something it tells
    assert copying.copies(content_words("Melanie: Wow, love that painting!"))
    assert copying.copies(content_words("[8 May 2023] Melanie: Wow, love that painting!"))
    assert not copying.copies(content_words("Melanie loves Ana's painting"))
    assert Copying.of([("Oh, hey!", 1)]) is None  # no content word: nothing said


def test_a_message_repeating_a_memory_stored_before_it_says_nothing() -> None:
    """A prompt listing the notes held is recorded as a message: the fact it relays is the
    memory system's text, not said by anyone, and a statement holding it is a rewrite."""
    said = ("Ana moved from Porto to Lisbon last month.", 5)
    note = "Ana, the user's sister, lives in Porto."
    prompt = (f"Notes:\n[note-1] {note}\n\nNew fact: The user's sister Ana relocated to Lisbon.", 7)
    relayed = content_words("New fact: The user's sister Ana relocated to Lisbon.")
    relaying = Copying.of([said, prompt], [(note, 3)])
    assert relaying is not None and not relaying.copies(relayed)
    saying = Copying.of([said, prompt], [(note, 9)])  # the note stored after the message
    assert saying is not None and saying.copies(relayed)


def test_a_turn_repeating_a_sentence_of_a_stored_turn_still_says_its_own() -> None:
    """Only a line holding a whole earlier memory relays it: in a conversation stored turn by
    turn, a later turn opening as an earlier one did ("Glad you had a great time!") still says
    what it goes on to say."""
    earlier = ("Caroline: Glad you had a great time! I went hiking with my dad.", 1)
    later = ("Caroline: Glad you had a great time! I adopted a puppy named Rex.", 3)
    copying = Copying.of([earlier, later], [(earlier[0], 2)], speakers=["Caroline"])
    assert copying is not None
    assert copying.copies(content_words("Caroline: I adopted a puppy named Rex."))


JONS = "Contemporary is my top pick, so expressive and powerful."
GINAS = "Contemporary dance is so expressive and graceful."


SISTER = "I went to a dance class with my sister yesterday."


def _dance_case(*stored: str) -> CaseGraph:
    """Gina's sentence is the evidence; the store holds Jon's turn and another of Gina's word for
    word, and ``stored``; nothing reached the answer's context."""
    anchor = Anchor(
        "t", "c", "What is Gina's favourite style of dance?", ("Contemporary",), "Hip-hop", True,
        "q", ANSWER, (SEARCH,), ("m",),
    )  # fmt: skip
    texts = (f"Jon: {JONS}", f"Gina: {SISTER}", *stored)
    memories = tuple(
        Memory(f"mem-{i}", 4 + i, text, ADD, None, None, None, None) for i, text in enumerate(texts)
    )
    copying = Copying.of(
        [(JONS, 1), (GINAS, 2), (SISTER, 3)], [(m.value, m.seq) for m in memories], ["Jon", "Gina"]
    )
    flow = tuple(FlowStep("m", 0, EXTRACT, "m", m.id, m.value) for m in memories[1:])
    roles = ((EXTRACT, "reads_evidence"), (SEARCH, "retrieval"), (ANSWER, "answer"))
    return CaseGraph(anchor, (Evidence("m", GINAS, seq=2),), flow, memories, (), roles, copying)


def _verdict(graph: CaseGraph, options: Options) -> tuple[str | None, str | None]:
    trails = trace_all(graph, case_reader(options, graph))
    found = linear(OfflineJudge(), CaseView(graph, tuple(trails)), candidates(graph, trails))
    return (found.candidate.op.id if found.candidate else None), found.error_type


def test_auto_reads_a_copy_of_another_message_by_its_words() -> None:
    """Jon's turn is copied into the store; Gina's, the evidence, was dropped (the extraction
    stored another sentence of the conversation instead). The meaning reader takes Jon's copy
    for Gina's sentence (in the band, it keeps the answer's word): stored, so a RetrievalError.
    Jon's copy copies a message sentence: auto reads it by its words, and the extraction that
    dropped Gina's sentence is blamed."""
    graph = _dance_case()
    vocabulary = sorted(content_words("contemporary dance expressive graceful powerful"))
    meaning = MeaningReader(_bag_encoder(vocabulary), model="bag")
    assert _verdict(graph, Options(reader=meaning)) == ("search", "RetrievalError")
    auto = AutoReader(meaning)
    assert _verdict(graph, Options(reader=auto)) == ("extract", "ExtractionError")
    # a text read without its trace (a replay's repair), or a trace without messages: meaning
    assert auto.read(GINAS, [f"Jon: {JONS}"]).sense == "meaning:bag"
    assert auto.for_trace(None) is meaning


def test_auto_reads_a_rewrite_among_copies_by_meaning() -> None:
    """The same store, but Gina's sentence was also stored in other words: a statement copying
    no message sentence is a rewrite, read by meaning, whatever the trace's other memories do
    (read by its words, as a trace whose memories mostly copy was: ExtractionError)."""
    graph = _dance_case("Gina loves contemporary dance for being so graceful.")
    vocabulary = sorted(content_words("contemporary dance expressive graceful powerful"))
    auto = AutoReader(MeaningReader(_bag_encoder(vocabulary), model="bag"))
    assert _verdict(graph, Options(reader=auto)) == ("search", "RetrievalError")
    assert _verdict(graph, Options(reader=LEXICAL)) == ("extract", "ExtractionError")


def test_a_record_is_read_by_its_strings_and_a_timestamp_is_no_rewording() -> None:
    """A store's JSON record copying a short turn, and its timestamp: neither is embedded, so
    a trace of verbatim turns never loads the model."""
    embedded: list[str] = []
    bag = _bag_encoder(sorted(content_words("paint lake sunrise love")))

    def encode(texts: Sequence[str]) -> np.ndarray:
        embedded.extend(texts)
        return bag(texts)

    copying = Copying.of([("Wow, love that painting!", 1)], speakers=["Melanie"])
    auto = AutoReader(MeaningReader(encode, model="bag")).for_trace(copying)
    sentence, needs = "I painted a lake sunrise in 2023.", content_words("2023")
    record = json.dumps({"id": "ab12", "memory": "Melanie: Wow, love that painting!"}, indent=4)
    assert not auto.read(sentence, [record], needs).held and embedded == []
    stamped = json.dumps({"id": "ab12", "timestamp": "2023-05-08T13:56:00"}, indent=4)
    assert not auto.read(sentence, [stamped], needs).held and embedded == []


def test_a_name_the_answer_does_not_need_lowers_certainty_instead_of_deciding() -> None:
    # "Ana moved from Porto to Lisbon" vs "Ana relocated to Lisbon": 2/sqrt(6) = 0.82
    reader = MeaningReader(_bag_encoder(sorted(content_words("ana lisbon porto"))), model="bag")
    sentence, rewrite = "Ana moved from Porto to Lisbon last month.", ["Ana relocated to Lisbon."]
    kept = reader.read(sentence, rewrite, content_words("Lisbon"))
    assert kept.score >= SAME and (kept.held, kept.sure) == (True, False)
    assert not reader.read(sentence, rewrite, content_words("Porto")).held  # the answer's name
    assert not reader.read(sentence, rewrite).held  # the answer unknown: every name
    # in the band (2/sqrt(10) = 0.63), a missing name is a second doubt: something else
    moved = MeaningReader(_bag_encoder(sorted(content_words("ana lisbon porto mov month"))), "bag")
    band = moved.read(sentence, rewrite, content_words("Lisbon"))
    assert OTHER <= band.score < SAME and (band.held, band.sure) == (False, False)


@needs_model
def test_auto_is_the_per_statement_choice_where_the_extra_is_installed() -> None:
    auto = make_reader("auto")
    assert isinstance(auto, AutoReader) and auto.for_trace(None).name == "meaning:all-MiniLM-L6-v2"
    copying = Copying.of([(TOLD, 1)])
    assert auto.for_trace(copying).name == auto.name


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
