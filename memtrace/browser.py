"""Neo4j Browser for memtrace: where it is, a launch URL with the connection prefilled, a GraSS
style, and the pattern queries one click away (Browser URL parameters ``cmd=edit&arg=``).

Nothing here needs a custom Browser build: it uses the URL parameters Neo4j Browser 5 documents
(``dbms``, ``db``, ``preselectAuthMethod``, ``cmd=edit|params``) and a standard GraSS file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from memtrace.cypher import Query, get_query
from memtrace.server.layout import ServerLayout
from memtrace.settings import Settings

# the pattern queries offered in the Browser, in the order a user explores a run
PATTERN_QUERIES = (
    "patterns/failure_classes",
    "patterns/by_category",
    "patterns/evidence_funnel",
    "patterns/evidence_position",
    "patterns/failed_attributions",
    "patterns/run_summary",
    "patterns/runs",
)

# Captions and colours for memtrace's labels; relationship captions show the type.
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
  caption: '{error_type}'; diameter: 60px; }
node.Operation { color: #4C8EDA; border-color: #2870C2; caption: '{name}'; diameter: 55px; }
node.Variable { color: #8DCC93; border-color: #5DB665; text-color-internal: #2A2C34;
  caption: '{name}'; diameter: 45px; }
node.Session { color: #C990C0; border-color: #B261A5; caption: '{name}'; }
relationship.BLAMES { color: #EB2728; shaft-width: 3px; }
relationship.HAS_ATTRIBUTION { color: #D7A013; shaft-width: 2px; }
"""


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


def params_line(run_id: str, query: Query) -> str:
    """``:params {...}`` with the run id set and every other parameter null (no filter)."""
    values: dict[str, object] = {name: None for name in query.params} | {"run_id": run_id}
    if "min_count" in query.params:
        values["min_count"] = 1
    body = ", ".join(f"{name}: {json.dumps(value)}" for name, value in values.items())
    return f":params {{{body}}}"


def editor_text(run_id: str, name: str) -> str:
    """What a query's link puts into the editor: its :params preset, then the query."""
    query = get_query(name)
    if not query.params:
        return query.text
    return f"{params_line(run_id, query)}\n{query.text}"


@dataclass(frozen=True)
class QueryLink:
    name: str
    description: str
    url: str


def query_links(where: BrowserTarget, run_id: str) -> list[QueryLink]:
    return [
        QueryLink(
            name,
            get_query(name).description,
            launch_url(where, "edit", editor_text(run_id, name)),
        )
        for name in PATTERN_QUERIES
    ]
