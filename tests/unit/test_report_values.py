"""The report's pure parts: stored values as a person reads them."""

from __future__ import annotations

from memtrace.report.document import readable


def test_a_stored_json_value_reads_as_fields_not_a_blob() -> None:
    message = '{"content": "I ran a 5k race.", "speaker": "Farid", "timestamp": "30 March 2023"}'
    assert (
        readable(message) == "content: I ran a 5k race.; speaker: Farid; timestamp: 30 March 2023"
    )
    assert readable('["a", {"b": 1}]') == "a; b: 1"
    assert readable("[]") == "(empty list)"
    assert readable("plain text | with a pipe") == "plain text | with a pipe"
    assert readable(None) == ""
