"""The HTML report in a real browser: headless Chromium (the Debian package; ``.ci/run`` installs it) opens
a copy of ``report.html`` alone in an empty folder, with no network, and the test checks that every image
loads and that the table of all segments sorts when a header is clicked.

Chromium is driven through the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (JSON messages
separated by NUL bytes on file descriptors 3 and 4), so no driver package is needed. Clicks are real mouse
events (``Input.dispatchMouseEvent``) at the header's position on the rendered page.

Without Chromium the tests skip with the reason, except in CI (``CI`` set), where they fail: a check
that cannot run there must not pass silently.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from axon_eval.reporting import save_run_figures
from axon_eval.reporting.report import write_report
from axon_eval.runs import evaluate

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
#: Where the Debian package puts the browser (the first found is used).
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Seconds any one protocol answer may take.
TIMEOUT_S = 60
#: Segments made unjudged in the copy, to check that blanks sort last both ways.
UNJUDGED = ("eu-0005", "us-0007")


def chromium_binary() -> str:
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    reason = ("headless Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it), so "
              "report.html cannot be checked in a browser")
    if os.environ.get("CI"):
        pytest.fail(reason + " -- and CI is set: this check must run in CI")
    pytest.skip(reason)


def _high_fd(fd: int) -> int:
    """``fd`` duplicated to a number >= 10 (so the child can map it onto 3 or 4 without a clash)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    """One headless Chromium with a DevTools pipe; :meth:`call` sends a command and returns its result,
    keeping the events that arrive meanwhile in :attr:`events`."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, to_chrome_w = (_high_fd(fd) for fd in os.pipe())
        from_chrome_r, from_chrome_w = (_high_fd(fd) for fd in os.pipe())
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-first-run",
                 "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                 "--window-size=1280,900", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        def onto_3_and_4() -> None:  # in the child, before exec: the protocol's fixed descriptors
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen([binary, *flags], preexec_fn=onto_3_and_4, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._in = os.fdopen(from_chrome_r, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._in.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the DevTools pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, session: str, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                      session)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except Exception:  # noqa: BLE001 - it may already be gone; it is killed below either way
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._in.close()


@pytest.fixture(scope="module")
def report_alone(tmp_path_factory):
    """``report.html`` of the bundled sample (two segments made unjudged) copied ALONE into an empty folder,
    the segments table's rows in page order (id, score) as the oracle reads them from the results, and the
    names of the run's figure files (each must be an image of the page)."""
    source = tmp_path_factory.mktemp("run")
    run = evaluate(SAMPLE, "heuristic", out_dir=source, cache=False, progress=False)
    save_run_figures(run)  # runs draw nothing; the figures the report is compared with
    results = pd.read_parquet(run.run_dir / "results")
    gone = results["segment_id"].isin(UNJUDGED)
    results.loc[gone, ["intent_understood", "sql_quality", "result_relevance", "answer_faithfulness", "raw_score",
                       "score"]] = np.nan
    results.loc[gone, ["band", "judge_verdict"]] = None
    results.loc[gone, "status"], results.loc[gone, "error"] = "unjudged", "judge could not grade: HTTP 529"
    results.to_parquet(run.run_dir / "results" / "part-00000.parquet", index=False)
    written = write_report(run.run_dir)
    alone = tmp_path_factory.mktemp("alone")
    copy = alone / "report.html"
    shutil.copyfile(written, copy)
    assert sorted(p.name for p in alone.iterdir()) == ["report.html"]
    figures = sorted(p.name for p in (run.run_dir / "figures").glob("*.png"))
    return copy, results[["segment_id", "score"]].reset_index(drop=True), figures


@pytest.fixture(scope="module")
def page(report_alone, tmp_path_factory):
    """The copy open in headless Chromium: ``(browser, session)``, every network request recorded."""
    binary = chromium_binary()
    browser = Browser(binary, tmp_path_factory.mktemp("profile"))
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Network.enable", session=session)
        browser.call("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": -1}, session)
        browser.call("Page.enable", session=session)
        browser.call("Page.navigate", {"url": report_alone[0].as_uri()}, session)
        browser.wait_for("Page.loadEventFired")
        yield browser, session
    finally:
        browser.close()


def test_every_image_loads_from_the_lone_file_with_no_network(page, report_alone):
    browser, session = page
    images = browser.evaluate(session, """
        Promise.all(Array.from(document.images).map(function (img) {
          return img.decode().then(function () { return null; }, function () { return null; });
        })).then(function () {
          return Array.from(document.images).map(function (img) {
            return {width: img.naturalWidth, height: img.naturalHeight, src: img.currentSrc.slice(0, 22),
                    alt: img.alt};
          });
        })""")
    figures = report_alone[2]
    assert len(figures) >= 4 and sorted(i["alt"] for i in images) == figures, (images, figures)
    broken = [i["alt"] for i in images if not (i["width"] > 0 and i["height"] > 0)]
    assert broken == [], f"images that did not load: {broken}"
    assert {i["src"] for i in images} == {"data:image/png;base64,"}
    requested = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    assert requested and all(u == report_alone[0].as_uri() or u.startswith("data:") for u in requested), requested


def test_the_page_opens_on_the_headline_and_the_cross_check_list_waits_a_click(page, report_alone):
    """On the first screen (the browser's own viewport, scrolled to the top): the headline, whole; no row of
    the cross-check's list is shown until its summary is clicked, and no shown table comes before the headline."""
    browser, session = page
    layout = browser.evaluate(session, """
        (function () {
          window.scrollTo(0, 0);
          var h = document.getElementById("headline").getBoundingClientRect();
          var list = document.getElementById("cross-check-list");
          var shown = Array.from(document.querySelectorAll("table")).filter(function (t) { return t.checkVisibility(); });
          var firstTable = shown[0].getBoundingClientRect();
          return {top: h.top, bottom: h.bottom, viewport: window.innerHeight,
                  text: document.getElementById("headline").innerText,
                  listOpen: list === null ? null : list.open,
                  listRowShown: list === null ? null : list.querySelector("tr").checkVisibility(),
                  tableTop: firstTable.top};
        })()""")
    assert 0 <= layout["top"] < layout["bottom"] <= layout["viewport"], layout
    judged = int(report_alone[1]["score"].notna().sum())  # the two unjudged segments have no score
    assert layout["text"].startswith("mean score ") and f"n = {judged} segments in " in layout["text"], layout
    assert layout["listOpen"] is False and layout["listRowShown"] is False, layout
    assert layout["tableTop"] >= layout["bottom"], layout


def _score_column(browser: Browser, session: str) -> list[tuple[str, str]]:
    return browser.evaluate(session, """
        Array.from(document.querySelector("table.all").tBodies[0].rows).map(function (r) {
          return [r.cells[0].textContent.trim(), r.cells[1].textContent.trim()];
        })""")


def _click_header(browser: Browser, session: str, name: str) -> None:
    box = browser.evaluate(session, f"""
        (function () {{
          var h = Array.from(document.querySelector("table.all").tHead.rows[0].cells)
                       .filter(function (c) {{ return c.textContent.trim() === {json.dumps(name)}; }})[0];
          h.scrollIntoView({{block: "center"}});
          var r = h.getBoundingClientRect();
          return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
        }})()""")
    browser.click(session, box["x"], box["y"])


def test_clicking_a_header_sorts_the_table_and_clicking_again_reverses_it(page, report_alone):
    browser, session = page
    _, results, _ = report_alone
    before = _score_column(browser, session)
    assert [sid for sid, _ in before] == results["segment_id"].tolist()  # input order until a click

    # the oracle: a stable sort of the input order by score, blanks (unjudged) last in both directions
    scored = results[results["score"].notna()]
    blanks = results.loc[results["score"].isna(), "segment_id"].tolist()
    assert sorted(blanks) == sorted(UNJUDGED)
    ascending = scored.sort_values("score", kind="stable")["segment_id"].tolist() + blanks
    descending = scored.sort_values("score", ascending=False, kind="stable")["segment_id"].tolist() + blanks

    _click_header(browser, session, "score")
    once = _score_column(browser, session)
    assert [sid for sid, _ in once] == ascending
    values = [float(v) for _, v in once if v]
    assert values == sorted(values) and values[0] < values[-1]
    assert [v for _, v in once[-len(blanks):]] == [""] * len(blanks)
    assert browser.evaluate(session, 'document.querySelector("table.all th[data-dir]").textContent') == "score"
    assert browser.evaluate(session, 'document.querySelector("table.all th[data-dir]").dataset.dir') == "asc"

    _click_header(browser, session, "score")
    twice = _score_column(browser, session)
    assert [sid for sid, _ in twice] == descending
    assert browser.evaluate(session, 'document.querySelector("table.all th[data-dir]").dataset.dir') == "desc"

    _click_header(browser, session, "segment")  # a text column sorts as text
    ids = [sid for sid, _ in _score_column(browser, session)]
    assert ids == sorted(results["segment_id"], key=str.lower)
