"""`memtrace report` on the seeded graph: the HTML parsed (every section and chart, nothing
external), the Markdown twin, and the optional narrative against the local fake OpenAI server."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from patterns_seed import Seed, seed, unseed
from test_browser import ARTIFACTS, CHROMIUM_ARGS
from test_review import _chromium

from memtrace.cli import cli
from memtrace.db import Database

pytestmark = pytest.mark.integration

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SECTIONS = {
    "start-here",
    "summary",
    "charts",
    "classes",
    "class-1",
    "class-2",
    "class-3",
    "categories",
    "evidence-position",
    "funnel",
    "comparison",
    "failed-attributions",
    "case-view",
}
CHARTS = {"failures-by-stage", "evidence-funnel", "top-classes", "comparison"}


class Page(HTMLParser):
    """Collects what the assertions look at: ids, figures, every URL-bearing attribute, tags."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.figures: set[str] = set()
        self.images: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = {name: value or "" for name, value in attrs}
        if "id" in values:
            self.ids.add(values["id"])
            if tag == "figure":
                self.figures.add(values["id"].removeprefix("chart-"))
        if tag == "img":
            self.images.append(values.get("src", ""))
        for name in ("href", "src", "action", "data", "poster"):
            if name in values and tag != "img":
                self.links.append(values[name])

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def seeded(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seed]:
    s = seed(db, tmp_path_factory.mktemp("seed"), f"r{uuid.uuid4().hex[:10]}")
    yield s
    unseed(db, s)


def _report(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["report", "--out", str(out), *args])
    return result.exit_code, result.output, out


def _parse(out: Path) -> Page:
    page = Page()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    return page


def test_report_html_is_complete_and_self_contained(seeded: Seed, tmp_path: Path) -> None:
    code, output, out = _report(tmp_path, "--run", seeded.run2, "--compare-with", seeded.run1)
    assert code == 0, output
    page = _parse(out)
    assert page.ids >= SECTIONS
    assert "narrative" not in page.ids  # off by default
    assert page.figures == CHARTS
    assert len(page.images) == len(CHARTS)
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert not page.tags & {"script", "link", "iframe", "object", "embed"}
    # nothing but in-page anchors and the local Neo4j Browser's "open this case" links
    external = [u for u in page.links if not u.startswith(("#", "http://127.0.0.1:"))]
    assert external == []
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "https://" not in html and "//cdn" not in html
    text = " ".join(page.text)
    assert "no optimizable input" in text  # the update class
    # the age table: buckets from the run's ages (0 or 1 messages in between), with its totals
    ages = html.split('<section id="evidence-position">', 1)[1].split("</section>", 1)[0]
    assert "messages recorded between the evidence message and the question" in ages
    assert "<td>0</td>" in ages and "<td>1+</td>" in ages and "0-49" not in ages
    assert "malformed judge output" in text  # the failed attribution, listed
    assert "Question q3?" in text and "seeded verdict for q4" in text  # example cases
    assert ':params {run_id: "' + seeded.run2 + '", trace_id: "' in text  # a case's view
    assert "MATCH (c:Case {trace_id: $trace_id, id: $case_id})" in text
    assert html.count("MATCH (c:Case {trace_id: $trace_id, id: $case_id})") == 1  # once
    # the answer first: the class to fix, its inputs, one case, the commands
    start = html.split('<section id="start-here">', 1)[1].split("</section>", 1)[0]
    assert "fix first" in start and "inputs to change" in start and "one case" in start
    assert "memtrace explain q" in start and f"memtrace review --run {seeded.run2}" in start
    assert "what fixing it buys is not measured" in start  # no what-if for this run


def test_report_first_screen_in_chromium_at_1280(seeded: Seed, tmp_path: Path) -> None:
    """No sideways scroll at 1280 px, and the 'start here' block is on the first screen."""
    executable = _chromium()
    from playwright import sync_api

    code, output, out = _report(tmp_path, "--run", seeded.run2, "--compare-with", seeded.run1)
    assert code == 0, output
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((out / "report.html").as_uri())
            page.screenshot(path=str(ARTIFACTS / "report-first-screen.png"))
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            box = page.locator("#start-here").bounding_box()
            assert box is not None and box["y"] + box["height"] <= 900, box
        finally:
            browser.close()
    assert (ARTIFACTS / "report-first-screen.png").stat().st_size > 10_000


def test_markdown_twin_has_every_section_and_chart(seeded: Seed, tmp_path: Path) -> None:
    code, output, out = _report(tmp_path, "--run", seeded.run2, "--compare-with", seeded.run1)
    assert code == 0, output
    markdown = (out / "report.md").read_text(encoding="utf-8")
    for heading in (
        "## Summary",
        "## Failure classes",
        "## Evidence-loss funnel",
        "## Run comparison",
        "## Cases whose attribution failed",
    ):
        assert heading in markdown
    for chart in CHARTS:
        assert f"(charts/{chart}.png)" in markdown
        assert (out / "charts" / f"{chart}.png").read_bytes().startswith(PNG_MAGIC)


def test_report_of_unknown_run_fails(seeded: Seed, tmp_path: Path) -> None:
    code, output, out = _report(tmp_path, "--run", f"{seeded.scope}-nope")
    assert code == 1 and "no attribution run" in output
    assert not (out / "report.html").exists()


def test_narrative_from_the_llm(
    seeded: Seed, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMTRACE_LLM_MODEL", f"fake-{uuid.uuid4().hex[:8]}")  # no cache hit
    analysis = {"summary": "Updates lose most facts.", "findings": ["Fix the update step."]}
    fake_openai.script(Reply(content="not json"), Reply(content=json.dumps(analysis)))
    code, output, out = _report(tmp_path, "--run", seeded.run2, "--narrative")
    assert code == 0, output
    page = _parse(out)
    assert "narrative" in page.ids
    assert "Updates lose most facts." in " ".join(page.text)
    assert "Fix the update step." in (out / "report.md").read_text(encoding="utf-8")
    assert len(fake_openai.chat_requests) == 2  # one repair round for the malformed reply
    prompt = fake_openai.chat_requests[0].body["messages"][-1]["content"]
    assert "memory_system.update_memory_decision" in prompt


def test_failed_narrative_keeps_the_report_and_exits_non_zero(
    seeded: Seed, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMTRACE_LLM_MODEL", f"fake-{uuid.uuid4().hex[:8]}")
    fake_openai.script(Reply(content="nope"), Reply(content="{still not it"))
    code, output, out = _report(tmp_path, "--run", seeded.run1, "--narrative")
    assert code == 1
    assert "without its analysis" in output
    page = _parse(out)
    assert {"summary", "narrative", "classes"} <= page.ids
    assert "The written analysis failed" in " ".join(page.text)
