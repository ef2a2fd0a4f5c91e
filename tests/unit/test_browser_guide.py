"""memtrace.browser without a browser: the launch URL, the guide and its local server."""

from __future__ import annotations

import html
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from memtrace.browser import (
    GRASS,
    BrowserTarget,
    guide_params,
    guide_server,
    launch_url,
    render_guide,
)
from memtrace.patterns.reader import BROWSER_QUERIES, pattern_query

WHERE = BrowserTarget(
    "http://127.0.0.1:7474/browser/", "bolt://127.0.0.1:7687", "neo4j", "neo4j", Path("/x")
)


def test_launch_url_prefills_connection_and_editor() -> None:
    url = launch_url(WHERE, "edit", ":guide http://localhost:9/memtrace.html")
    query = parse_qs(urlsplit(url).query)
    assert query["dbms"] == ["bolt://neo4j@127.0.0.1:7687"]
    assert query["db"] == ["neo4j"] and query["preselectAuthMethod"] == ["NATIVE"]
    assert query["cmd"] == ["edit"]
    assert query["arg"] == [":guide http://localhost:9/memtrace.html"]
    assert "password" not in url


def test_guide_holds_style_params_and_every_pattern_query() -> None:
    guide = render_guide("run-1", "http://localhost:9", ("t-1", "case <1>"))
    assert '<article class="guide">' in guide
    assert ":style http://localhost:9/memtrace.grass" in guide
    for name in BROWSER_QUERIES:
        # every line of the query but the file's example parameters (the demo's run, not this)
        lines = pattern_query(name).text.strip().splitlines()
        example = [line for line in lines if line.startswith("// In Neo4j Browser: :params")]
        shown = [line for line in lines if line not in example]
        assert html.escape("\n".join(shown)) in guide
    assert "demo" not in guide and html.escape('run_id: "run-1"') in guide
    assert "case &lt;1&gt;" in guide  # values are escaped
    assert guide.count('class="pre-scrollable code runnable"') == len(BROWSER_QUERIES) + 2


def test_guide_params_cover_every_query_parameter() -> None:
    values = guide_params("run-1", None)
    for name in BROWSER_QUERIES:
        assert set(pattern_query(name).params) <= set(values)
    assert values["run_id"] == "run-1" and values["min_count"] == 1
    assert values["system"] is None and values["case_id"] is None


def test_guide_server_serves_guide_and_style_with_cors() -> None:
    with guide_server("run-1", None) as (_, guide_url):
        with urllib.request.urlopen(guide_url, timeout=10) as response:
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "memtrace: failure patterns" in response.read().decode()
        grass_url = guide_url.replace("memtrace.html", "memtrace.grass")
        with urllib.request.urlopen(grass_url, timeout=10) as response:
            assert response.read().decode() == GRASS
        preflight = urllib.request.Request(guide_url, method="OPTIONS")
        with urllib.request.urlopen(preflight, timeout=10) as response:
            assert response.status == 204
    for label in ("Case", "Attribution", "Operation", "Variable", "Trace"):
        assert f"node.{label}" in GRASS


def test_the_case_view_says_how_to_see_the_whole_graph() -> None:
    guide = render_guide("run-1", "http://localhost:9", None)
    case_view = guide.split("<h3>case view</h3>", 1)[1]
    assert case_view.index("Collapse the node properties display") < case_view.index("<pre")
    assert guide.count("Collapse the node properties display") == 1  # that slide only
