"""The built documentation site reads clean: no reST left unrendered, no development log.

Reads the HTML that ``make docs`` writes to ``docs/_build/html`` (``make test`` builds it first); when
that folder is missing the site is built here, into a temporary folder, the way ``make docs`` builds it.

* No page shows literal double backticks in its text: a ``code`` span that docutils could not close
  (``lo``..``hi`` glued together, a role with a typo) renders as raw markup instead of code.
* No page cites an issue number: a docstring or page keeps the reason, never the tracker's number.

Code blocks (``<pre>``) are left out: a literal block may show markup on purpose.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUILT = DOCS / "_build" / "html"

ISSUE = re.compile(r"\bissues?\s*#?\d+", re.I)
BACKTICKS = re.compile(r"``")


class _Text(HTMLParser):
    """The visible text of a page, without ``<pre>``, ``<script>`` and ``<style>`` contents."""

    SKIP = {"pre", "script", "style"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.parts)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if (BUILT / "index.html").exists():
        return BUILT
    out = tmp_path_factory.mktemp("docs-html")
    subprocess.run([sys.executable, "-m", "sphinx", "-E", "-q", "-b", "html", str(DOCS), str(out)],
                   check=True, cwd=ROOT)
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


def _problems(site: Path, pattern: re.Pattern[str]) -> list[str]:
    found = []
    for page in _pages(site):
        text = visible_text(page.read_text(encoding="utf-8"))
        for m in pattern.finditer(text):
            context = " ".join(text[max(0, m.start() - 60):m.end() + 60].split())
            found.append(f"{page.relative_to(site)}: ...{context}...")
    return found


def test_the_site_has_api_pages(site):
    api = [p for p in _pages(site) if "generated" in p.parts]
    assert len(api) > 50, f"only {len(api)} API pages under {site}"


def test_no_literal_double_backticks(site):
    problems = _problems(site, BACKTICKS)
    assert not problems, "raw ``code`` markup shown as text:\n" + "\n".join(problems)


def test_no_issue_numbers(site):
    problems = _problems(site, ISSUE)
    assert not problems, "issue numbers in the published site:\n" + "\n".join(problems)


def test_the_checks_catch_what_they_should():
    page = "<p>bounds ``lo``..<code>hi</code></p><pre>``kept``</pre><p>see issue 22</p>"
    text = visible_text(page)
    assert BACKTICKS.search(text) and ISSUE.search(text)
    assert "kept" not in text
    assert not ISSUE.search("the tissue sample 3") and not BACKTICKS.search(visible_text("<code>x</code>"))


#: Folders of the package the source check below does not read yet (their text is being rewritten as data).
SOURCE_EXCLUDED: tuple[str, ...] = ("axon_eval/fixtures",)


def test_no_issue_numbers_in_the_source():
    """No docstring or comment of the package, and no notebook, cites an issue number."""
    files = [*sorted((ROOT / "axon_eval").rglob("*.py")), *sorted((ROOT / "notebooks").rglob("*.ipynb"))]
    problems = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(x + "/") for x in SOURCE_EXCLUDED) or ".ipynb_checkpoints" in rel:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE.search(line):
                problems.append(f"{rel}:{n}: {line.strip()[:120]}")
    assert not problems, "issue numbers in the source:\n" + "\n".join(problems)
