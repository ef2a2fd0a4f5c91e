import pytest
from queries import all_benchmark_queries

from memtrace.cypher import QueryFileError, all_queries, parse_query


def test_header_is_parsed() -> None:
    query = parse_query(
        "x/find",
        "// Finds things.\n// params: $trace_id, $limit\n// returns: id, seq\n"
        "MATCH (o:Operation {trace_id: $trace_id}) RETURN o.id AS id, o.seq AS seq LIMIT $limit\n",
    )
    assert query.description == "Finds things."
    assert query.params == ("trace_id", "limit")
    assert query.columns == ("id", "seq")


def test_header_must_name_every_parameter() -> None:
    with pytest.raises(QueryFileError, match="differ"):
        parse_query("x/bad", "// Bad.\n// params: $a\n// returns: -\nRETURN $a, $b\n")


def test_header_is_required() -> None:
    with pytest.raises(QueryFileError, match="params"):
        parse_query("x/bad", "// Bad.\n// returns: -\nRETURN 1\n// x\n")


def test_every_bundled_query_has_a_valid_header() -> None:
    for query in [*all_queries(), *all_benchmark_queries()]:
        assert query.text.startswith("// ")
