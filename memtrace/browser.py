"""Neo4j Browser for memtrace: a launch URL with the connection prefilled, a GraSS style, and
a Browser guide with the pattern queries one click away.

Nothing here needs a custom Browser build. It uses what Neo4j Browser 5 documents: the URL
parameters ``dbms``, ``db``, ``preselectAuthMethod`` and ``cmd=edit&arg=`` (the editor holds
``:guide <url>`` after login), remote guides loaded with ``:guide <url>`` from an allow-listed
host (``localhost`` is in ``browser.remote_content_hostname_allowlist`` by default), runnable
blocks in the guide that put a query into the editor, and ``:style <url>`` for the GraSS file.
The guide and the style are served by a small local HTTP server while `memtrace browser` runs.
"""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from memtrace.patterns.reader import BROWSER_QUERIES, pattern_query
from memtrace.server.layout import ServerLayout
from memtrace.settings import Settings

# Captions and colours for memtrace's labels; relationship captions show the type. Captions are
# short words that fit their circle (an op's kind, an error type; a variable's name): the
# Browser cuts longer ones ("memory_..."); a click shows every property.
GRASS = """\
node {
  diameter: 50px;
  color: #A5ABB6;
  border-color: #9AA1AC;
  border-width: 2px;
  text-color-internal: #FFFFFF;
  font-size: 10px;
}
relationship {
  color: #A5ABB6;
  shaft-width: 1px;
  font-size: 8px;
  padding: 3px;
  text-color-external: #000000;
  text-color-internal: #FFFFFF;
  caption: '<type>';
}
node.Trace { color: #57C7E3; border-color: #23B3D7; caption: '{system}'; diameter: 65px; }
node.Case { color: #F16667; border-color: #EB2728; caption: '{id}'; diameter: 60px; }
node.Attribution { color: #FFC454; border-color: #D7A013; text-color-internal: #2A2C34;
  caption: '{error_type}'; diameter: 90px; font-size: 9px; }
node.Operation { color: #4C8EDA; border-color: #2870C2; caption: '{kind}'; diameter: 65px; }
node.Variable { color: #8DCC93; border-color: #5DB665; text-color-internal: #2A2C34;
  caption: '{name}'; diameter: 60px; font-size: 9px; }
node.Session { color: #C990C0; border-color: #B261A5; caption: '{name}'; }
relationship.BLAMES { color: #EB2728; shaft-width: 3px; }
relationship.HAS_ATTRIBUTION { color: #D7A013; shaft-width: 2px; }
"""


# What a query's slide says beside the query's own description, by query name.
GUIDE_HINTS = {
    # Measured in Chromium at 1280x900 (tests/integration/test_browser.py): the guide drawer sits
    # beside the stream, but the result frame's Overview panel lies over the right 256 px of the
    # graph, which the Browser fits to the whole frame; no setting or command folds the panel.
    "case_view": "The Browser fits the graph to the whole result frame, and the frame's "
    "Overview panel covers its right side: fold the panel with the arrow at its top right "
    "(Collapse the node properties display) to see all of the graph. Later result frames open "
    "folded until the Browser page is reloaded.",
}


@dataclass(frozen=True)
class BrowserTarget:
    """Where the Browser is and how it connects (no password: that stays in its file)."""

    url: str  # e.g. http://127.0.0.1:7474/browser/
    bolt_uri: str
    user: str
    database: str
    password_file: Path | None  # the managed server's generated password, if that is the server


def target(settings: Settings, browser_url: str | None = None) -> BrowserTarget | None:
    """The Browser of the configured server: the managed one's, or ``browser_url``."""
    neo4j = settings.neo4j
    password_file = None
    if neo4j.managed:
        layout = ServerLayout(settings.home)
        state = layout.read_state()
        if state is not None and browser_url is None:
            browser_url = f"http://127.0.0.1:{state.http_port}/browser/"
        if state is not None and state.auth:
            password_file = layout.password_file
    if browser_url is None:
        return None
    return BrowserTarget(browser_url, neo4j.uri, neo4j.user, neo4j.database, password_file)


def _connect_uri(bolt_uri: str, user: str) -> str:
    parts = urlsplit(bolt_uri)
    return f"{parts.scheme}://{user}@{parts.netloc}"


def launch_url(where: BrowserTarget, command: str | None = None, arg: str | None = None) -> str:
    """The Browser URL with the connect form prefilled (and the editor, given a command)."""
    params = {
        "dbms": _connect_uri(where.bolt_uri, where.user),
        "db": where.database,
        "preselectAuthMethod": "NATIVE",
    }
    if command is not None and arg is not None:
        params |= {"cmd": command, "arg": arg}
    return f"{where.url}?{urlencode(params, quote_via=quote, safe=':/@')}"


def params_line(values: dict[str, object]) -> str:
    """``:params {...}`` in Browser syntax (JSON values are valid Cypher map values)."""
    body = ", ".join(f"{name}: {json.dumps(value)}" for name, value in values.items())
    return f":params {{{body}}}"


def guide_params(run_id: str, case: tuple[str, str] | None) -> dict[str, object]:
    """Every parameter the guide's queries use: the run, no filters, one example case."""
    values: dict[str, object] = {}
    for name in BROWSER_QUERIES:
        for param in pattern_query(name).params:
            values[param] = None
    values |= {"run_id": run_id, "min_count": 1}
    if case is not None:
        values |= {"trace_id": case[0], "case_id": case[1]}
    return values


def render_guide(run_id: str, base_url: str, case: tuple[str, str] | None) -> str:
    """A Neo4j Browser guide (``:guide URL``): click a block to put it into the editor."""

    def block(text: str) -> str:
        return f'<pre class="pre-scrollable code runnable">{html.escape(text.strip())}</pre>'

    slides = [
        "<h3>memtrace: failure patterns</h3>"
        f"<p>Attribution run <b>{html.escape(run_id)}</b>. Click a grey block to put it into the "
        "editor, then run it. First the style (captions and colours for memtrace's labels):</p>"
        + block(f":style {base_url}/memtrace.grass")
        + "<p>then the parameters every query below uses (edit them to filter by system, error "
        "type or a minimum count, or to open another case):</p>"
        + block(params_line(guide_params(run_id, case)))
    ]
    for name in BROWSER_QUERIES:
        query = pattern_query(name)
        slides.append(
            f"<h3>{html.escape(name.replace('_', ' '))}</h3>"
            f"<p>{html.escape(query.description)}</p>"
            + (f"<p>{html.escape(GUIDE_HINTS[name])}</p>" if name in GUIDE_HINTS else "")
            + block(_for_this_run(query.text))
        )
    # one slide: the guide drawer pages between slides, a single one scrolls
    body = "".join(slides)
    return (
        '<article class="guide"><carousel class="deck container-fluid">'
        f'<slide class="row-fluid"><div class="col-sm-12">{body}</div></slide>'
        "</carousel></article>\n"
    )


def _for_this_run(text: str) -> str:
    """A query as the guide shows it: without the file's example ``:params`` line (another
    run's, e.g. the demo's); the guide's own parameter block above sets this run's."""
    return "\n".join(
        line for line in text.splitlines() if not line.startswith("// In Neo4j Browser: :params")
    )


@dataclass(frozen=True)
class GuideFiles:
    """What the guide server serves, by path."""

    files: dict[str, tuple[str, bytes]]  # path -> (content type, body)


def guide_files(run_id: str, base_url: str, case: tuple[str, str] | None) -> GuideFiles:
    return GuideFiles(
        {
            "/memtrace.html": (
                "text/html; charset=utf-8",
                render_guide(run_id, base_url, case).encode(),
            ),
            "/memtrace.grass": ("text/plain; charset=utf-8", GRASS.encode()),
        }
    )


def _handler(files: GuideFiles) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # The Browser fetches guides and styles with CORS requests from its own origin.
        def _headers(self, status: int, content_type: str | None, length: int) -> None:
            self.send_response(status)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.send_header("Access-Control-Allow-Methods", "GET, OPTIONS")
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def do_OPTIONS(self) -> None:
            self._headers(204, None, 0)

        def do_GET(self) -> None:
            found = files.files.get(self.path.split("?", 1)[0])
            if found is None:
                self._headers(404, "text/plain", 0)
                return
            content_type, body = found
            self._headers(200, content_type, len(body))
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # keep the terminal quiet
            return

    return Handler


@contextmanager
def guide_server(
    run_id: str, case: tuple[str, str] | None, port: int = 0
) -> Iterator[tuple[ThreadingHTTPServer, str]]:
    """Serve the guide and the style on localhost (the Browser's default allow-list host for
    remote guides) in a background thread; yields the server and the guide's URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(GuideFiles({})))
    base_url = f"http://localhost:{server.server_address[1]}"
    server.RequestHandlerClass = _handler(guide_files(run_id, base_url, case))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"{base_url}/memtrace.html"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
