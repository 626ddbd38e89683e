"""The labelling studio in a real browser: Playwright for Python driving Debian's headless Chromium
(``/usr/bin/chromium``; ``.ci/run`` installs it; no browser is downloaded).

A rater labels five segments by keyboard alone, reloads and resumes; the export equals what was typed;
the server is stopped mid-session and the outbox sends the waiting label exactly once after the restart;
the server is SIGKILLed between a label's fsync and its acknowledgement and the label is still stored
once; two raters work at once; a reviewer adjudicates one disagreement in ``label review --serve``
and the adjudicated export equals what was typed; a page served from another loopback port cannot read or write a label;
hostile evidence renders inert. Without Chromium or Playwright the tests skip with the reason, except in
CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.rubric import DIMENSIONS
from axon_eval.studio.export import export_frame
from axon_eval.studio.pack import init_pack
from axon_eval.studio.server import ACK_DELAY_ENV, StudioApp

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-extensions"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason + " -- and CI is set: this check must run in CI")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install 'playwright>=1.64,<1.65')")
    if not Path(CHROMIUM).exists():
        _unavailable("headless Chromium is not installed (Debian: apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name="browser",
                         progress=False, cache=False)


def make_pack(run, folder: Path, raters=("r1",), overlap=0, n=10) -> Path:
    sample = labelling.sample_for_labelling(run, n, seed=5)
    pack = labelling.write_labelling_pack(sample, run, folder / "pack")
    init_pack(pack, list(raters), overlap, 1)
    return pack


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_page(browser, url, context=None):
    page = (context or browser).new_page()
    page.on("dialog", lambda d: pytest.fail(f"a dialog opened: {d.message}"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=10000)
    return page, errors


def records(pack: Path, rater: str) -> list[dict]:
    path = pack / "labels" / f"{rater}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def type_label(page, values, verdict_key):
    """Type one label by keyboard alone: digits per dimension with arrow-down between, verdict, Ctrl+Enter."""
    for i, v in enumerate(values):
        for ch in str(v):
            page.keyboard.press(ch)
        if i < len(values) - 1:
            page.keyboard.press("ArrowDown")
    page.keyboard.press(verdict_key)
    page.keyboard.press("Control+Enter")


def wait_js(page, expression, timeout=10.0):
    """Poll ``expression`` in the page until it is true (the page's CSP forbids the eval that
    ``wait_for_function`` uses, so the waiting is done from here)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if page.evaluate(expression):
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {expression}")


def wait_progress(page, done, shown=None):
    """Wait until ``done`` labels are acknowledged and (``shown``) the 1-based segment ``shown`` is open."""
    wait_js(page, f"document.getElementById('progress').textContent.startsWith('{done} of')")
    if shown is not None:
        wait_js(page, f"document.querySelector('#panel .muted').textContent.includes('Segment {shown} of')")


def test_keyboard_labelling_resume_and_export(browser, run, tmp_path):
    pack = make_pack(run, tmp_path)
    app = StudioApp(pack, "r1", port=0)
    url = app.start()
    try:
        page, errors = open_page(browser, url)
        typed = {}
        keys = {"g": "good", "p": "partial", "b": "poor"}
        for k in range(5):
            values = [(k + 3) % 11, 10, (2 * k) % 11, 9 - k]
            key = "gpb"[k % 3]
            position = k
            type_label(page, values, key)
            wait_progress(page, k + 1, shown=k + 2)
            typed[position] = (values, keys[key])
        page.keyboard.press("?")
        assert page.is_visible("#help")
        page.reload()
        page.wait_for_selector("body[data-ready='1']")
        assert "Segment 6 of" in page.text_content("#panel")  # resumed where the rater stopped
        assert not errors
        if os.environ.get("AXON_EVAL_STUDIO_SCREENSHOTS"):
            page.screenshot(path=str(ROOT / "docs" / "_static" / "studio" / "label.png"))
        # go back and amend the fifth: a new record supersedes
        page.keyboard.press("Alt+ArrowLeft")
        wait_js(page, "document.getElementById('panel').textContent.includes('Segment 5 of')")
        assert "Saved earlier" in page.text_content("#panel")
        page.keyboard.press("ArrowRight")  # intent 7 -> 8
        page.keyboard.press("Control+Enter")
        wait_js(page, "document.getElementById('panel').textContent.includes('Segment 6 of')")
        typed[4] = ([typed[4][0][0] + 1, *typed[4][0][1:]], typed[4][1])
        page.close()
    finally:
        app.stop()
    recs = records(pack, "r1")
    assert len(recs) == 6 and recs[-1]["amends"] == recs[4]["id"]
    queue = json.loads((pack / "assignment.json").read_text())["queues"]["r1"]
    frame, _ = export_frame(pack)
    assert len(frame) == 5
    evidence = {json.loads(x)["segment_id"]: json.loads(x) for x in (pack / "studio" / "evidence.jsonl").read_text().splitlines()}
    for position, (values, verdict) in typed.items():
        sid = queue[position]
        row = frame[frame["segment_id"] == sid].iloc[0]
        want = dict(zip(DIMENSIONS, values, strict=True))
        if not evidence[sid]["answer_captured"]:
            want["answer_faithfulness"] = None
        for d in DIMENSIONS:
            assert (want[d] is None and row[d] is pd_na()) or row[d] == want[d], (sid, d)
        assert row["verdict"] == verdict


def pd_na():
    import pandas as pd

    return pd.NA


def test_outbox_flushes_once_after_a_server_restart(browser, run, tmp_path):
    pack = make_pack(run, tmp_path)
    port = free_port()
    app = StudioApp(pack, "r1", port=port)
    url = app.start()
    page, _ = open_page(browser, url)
    type_label(page, [5, 5, 5, 5], "p")
    wait_progress(page, 1, shown=2)
    app.stop()  # the server goes away mid-session
    type_label(page, [6, 6, 6, 6], "g")
    wait_js(page, "document.getElementById('status').textContent.includes('cannot be reached')")
    waiting = page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('axon-studio-outbox')).map(k => JSON.parse(localStorage[k]).length)")
    assert waiting == [1]
    assert len(records(pack, "r1")) == 1
    app2 = StudioApp(pack, "r1", port=port)
    url2 = app2.start()
    try:
        page.goto(url2)  # the new link (a fresh token); same address, so the same outbox
        page.wait_for_selector("body[data-ready='1']")
        wait_progress(page, 2)
        page.reload()
        page.wait_for_selector("body[data-ready='1']")
        time.sleep(0.3)
    finally:
        app2.stop()
    recs = records(pack, "r1")
    assert len(recs) == 2 and len({r["id"] for r in recs}) == 2 and recs[1]["verdict"] == "good"
    page.close()


def test_sigkill_between_fsync_and_ack_stores_the_label_once(browser, run, tmp_path):
    pack = make_pack(run, tmp_path)
    port = free_port()

    def serve(delay):
        env = {**os.environ, "PYTHONPATH": str(ROOT), ACK_DELAY_ENV: str(delay)}
        proc = subprocess.Popen([sys.executable, "-m", "axon_eval", "label", "serve", str(pack), "--rater", "r1",
                                 "--port", str(port), "--no-browser"], stdout=subprocess.PIPE, text=True, env=env)
        for line in proc.stdout:
            if line.startswith("open "):
                return proc, line.split()[1]
        raise AssertionError("label serve printed no URL")

    proc, url = serve(30)
    try:
        page, _ = open_page(browser, url)
        type_label(page, [4, 4, 4, 4], "b")
        deadline = time.time() + 10
        while not records(pack, "r1") and time.time() < deadline:
            time.sleep(0.05)
        assert len(records(pack, "r1")) == 1  # on disk, fsynced, not yet acknowledged
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    proc2, url2 = serve(0)
    try:
        page.goto(url2)
        page.wait_for_selector("body[data-ready='1']")
        wait_js(page, "Object.keys(localStorage).filter(k => k.startsWith('axon-studio-outbox'))"
                      ".every(k => JSON.parse(localStorage[k]).length === 0)")
    finally:
        proc2.send_signal(signal.SIGTERM)
        proc2.kill()
        proc2.wait(10)
    recs = records(pack, "r1")
    assert len(recs) == 1 and recs[0]["verdict"] == "poor"
    page.close()


def test_two_raters_at_once(browser, run, tmp_path):
    pack = make_pack(run, tmp_path, raters=("r1", "r2"), overlap=3)
    apps = [StudioApp(pack, r, port=0) for r in ("r1", "r2")]
    pages = [open_page(browser, a.start())[0] for a in apps]
    try:
        for k in range(3):
            for j, page in enumerate(pages):
                type_label(page, [k + j, 5, 5, 5], "g")
            for page in pages:
                wait_progress(page, k + 1, shown=k + 2)
    finally:
        for a in apps:
            a.stop()
    assert len(records(pack, "r1")) == 3 and len(records(pack, "r2")) == 3
    assert {r["rater"] for r in records(pack, "r2")} == {"r2"}


def test_review_adjudicates_one_disagreement(browser, run, tmp_path):
    from axon_eval.cli import main
    from axon_eval.studio.session import RaterSession

    pack = make_pack(run, tmp_path, raters=("r1", "r2"), overlap=3)
    for rater, verdict, value in (("r1", "good", 9), ("r2", "poor", 2)):
        s = RaterSession(pack, rater)
        for i in range(len(s.queue)):
            ev = s.item(i)["evidence"]
            scores = {d: value for d in DIMENSIONS} | ({} if ev["answer_captured"] else {"answer_faithfulness": None})
            s.save({"id": f"{rater}-label-{i:04d}", "position": i, "segment_id": ev["segment_id"], "scores": scores,
                    "verdict": verdict, "comment": f"{rater} says {verdict}"})
        s.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "axon_eval", "label", "review", str(pack), "--serve", "--reviewer",
                             "lead", "--port", "0", "--no-browser"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = next((line.split()[1] for line in proc.stdout if line.startswith("open ")), None)
        assert url, "label review --serve printed no URL"
        page, errors = open_page(browser, url)
        assert page.text_content("#progress").startswith("0 of 3 adjudicated")
        rows = {r: page.text_content(f"#raters-table tr[data-rater='{r}']") for r in ("r1", "r2")}
        assert "good" in rows["r1"] and "r1 says good" in rows["r1"] and "poor" in rows["r2"]
        assert page.is_disabled("#show-judge")  # the reviewer has labelled nothing: the judge stays hidden
        sid = json.loads((pack / "assignment.json").read_text())["overlap"][0]  # verdicts differ on every one
        assert f"segment {sid}" in page.text_content("#evidence")
        captured = "not graded" not in page.text_content("#dim-answer_faithfulness")
        values = [6, 10, 3, 7]
        for i, v in enumerate(values):  # digits by keyboard, arrow-down between dimensions
            for ch in str(v):
                page.keyboard.press(ch)
            if i < len(values) - 1:
                page.keyboard.press("ArrowDown")
        page.click("#verdict-partial")  # the mouse works too
        page.keyboard.press("n")
        page.keyboard.type("both half right")
        page.keyboard.press("Escape")
        if os.environ.get("AXON_EVAL_STUDIO_SCREENSHOTS"):
            page.screenshot(path=str(ROOT / "docs" / "_static" / "studio" / "review.png"))
        page.keyboard.press("Control+Enter")
        wait_js(page, "document.getElementById('progress').textContent.startsWith('1 of 3')")
        wait_js(page, "document.getElementById('panel').textContent.includes('Disagreement 2 of 3')")
        assert not errors
        page.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    recs = records(pack, "adjudicated")
    want = dict(zip(DIMENSIONS, values, strict=True)) | ({} if captured else {"answer_faithfulness": None})
    assert len(recs) == 1
    rec = recs[0]
    assert (rec["segment_id"], rec["reviewer"], rec["verdict"], rec["comment"]) == (sid, "lead", "partial", "both half right")
    assert {d: rec[d] for d in DIMENSIONS} == want and rec["judge_shown_before"] is False
    assert sorted(rec["settles"]) == ["r1", "r2"]
    assert not (pack / "labels" / "reveals.jsonl").read_text()
    assert main(["label", "export", str(pack), "--adjudicated"]) == 0
    import pandas as pd

    frame = pd.read_csv(pack / "studio-adjudicated.csv", keep_default_na=False)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["segment_id"], row["rater"], row["verdict"], row["comment"]) == (sid, "adjudicated", "partial",
                                                                                 "both half right")
    for d in DIMENSIONS:
        assert (row[d] == "" and want[d] is None) or int(row[d]) == want[d], d


class Attacker(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


def test_a_page_on_another_loopback_port_cannot_read_or_write(browser, run, tmp_path):
    pack = make_pack(run, tmp_path)
    app = StudioApp(pack, "r1", port=0)
    app.start()
    page, _ = open_page(browser, app.url)  # the rater's own tab is open meanwhile
    target = f"http://127.0.0.1:{app.port}"
    label = json.dumps({"id": "attack000001", "position": 0, "segment_id": "x", "scores": {}, "verdict": "good"})
    Attacker.page = f"""<!doctype html><html><body><form id=f method=post action="{target}/api/label"
 enctype="text/plain" target=sink><input name='{{"a":"' value='"}}'></form><iframe name=sink></iframe><script>
const out = [];
const token = {json.dumps(app.token)};  // even with the token leaked, another origin is refused
async function go() {{
  for (const [path, init] of [["/api/session", {{}}], ["/api/session", {{headers: {{Authorization: "Bearer " + token}}}}],
      ["/api/label", {{method: "POST", headers: {{"Content-Type": "application/json", Authorization: "Bearer " + token}}, body: {json.dumps(label)}}}],
      ["/api/label", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body: {json.dumps(label)}}}]]) {{
    try {{ const r = await fetch("{target}" + path, init); out.push(r.type + ":" + r.status + ":" + (await r.text()).slice(0, 40)); }}
    catch (e) {{ out.push("blocked"); }}
  }}
  document.getElementById("f").submit();
  document.title = JSON.stringify(out);
}}
go();
</script></body></html>""".encode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        evil = browser.new_page()
        evil.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        wait_js(evil, "document.title.startsWith('[')")
        results = json.loads(evil.title())
        time.sleep(0.5)
        assert not any("rater" in r or "progress" in r for r in results), results  # nothing read
        evil.close()
    finally:
        server.shutdown()
        app.stop()
    assert records(pack, "r1") == []  # nothing written
    page.close()


HOSTILE = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "\u202eevil\u202c text", "nul\x00byte"]


def test_hostile_evidence_renders_inert(browser, run, tmp_path):
    src = tmp_path / "run"
    shutil.copytree(run.run_dir, src)
    entries = [json.loads(x) for x in (src / "audit.jsonl").read_text().splitlines()]
    sampled = {next(e["segment_id"] for e in entries if any(st.get("kind") == "sql" and st.get("status") == "ok"
                                                            for st in e["steps"]))}
    for e in entries:
        e["question"] = " | ".join(HOSTILE)
        e["answer"] = HOSTILE[1]
        sql = next((s for s in e["steps"] if s.get("kind") == "sql" and s.get("status") == "ok"), None)
        if sql is not None and e["segment_id"] in sampled:
            sql["sql"] = "SELECT '" + HOSTILE[0] + "'"
            sql["columns"] = ["a", "b"]
            sql["rows"] = [["x" * 1_000_000, HOSTILE[1]]] + [[i, HOSTILE[2]] for i in range(99_999)]
            sql["row_count"] = 100_000
    (src / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    loaded = runs.load_run(src)
    pack = tmp_path / "pack"  # a one-segment pack: only its design.json matters to the studio
    pack.mkdir()
    (pack / "design.json").write_text(json.dumps({"source_run": str(src), "segments": [
        {"segment_id": sid, "weight": 1.0, "inclusion_probability": 1.0} for sid in sampled]}))
    init_pack(pack, ["r1"], 0, 1, run=loaded)
    app = StudioApp(pack, "r1", port=0)
    try:
        page, errors = open_page(browser, app.start())
        text = page.text_content("#evidence")
        assert "<img src=x onerror=alert(1)>" in text and "</script>" in text  # shown as text
        assert page.evaluate("document.querySelectorAll('#evidence img, #evidence script').length") == 0
        assert "\u27e8U+202E\u27e9" in text and "\u27e8U+0000\u27e9" in text  # visible, not obeyed
        assert "of the 100,000 rows" in text and "show all 1,000,000 characters" in text
        assert page.evaluate("document.querySelectorAll('#evidence tbody tr').length") == 200  # paged, not all
        start = time.time()
        page.keyboard.press("7")
        assert page.text_content("#dim-intent_understood .value") == "7" and time.time() - start < 2
        assert not errors
        page.close()
    finally:
        app.stop()


def test_skip_by_keyboard_and_a_full_disk_said_in_the_page(browser, run, tmp_path):
    import errno

    pack = make_pack(run, tmp_path)
    app = StudioApp(pack, "r1", port=0)
    page, _ = open_page(browser, app.start())
    try:
        page.keyboard.press("s")  # skip / cannot judge, the reason field takes the keys
        page.keyboard.type("the rows are cut off")
        page.keyboard.press("Control+Enter")
        wait_progress(page, 1, shown=2)
    finally:
        app.stop()
        page.close()
    rec = records(pack, "r1")
    assert len(rec) == 1 and rec[0]["kind"] == "skip" and rec[0]["skip_reason"] == "the rows are cut off"

    class Full:
        def __init__(self, path):
            self.fh = open(path, "ab", buffering=0)  # noqa: SIM115

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

        def fileno(self):
            return self.fh.fileno()

        def close(self):
            self.fh.close()

    from axon_eval.studio.session import RaterSession

    before = (pack / "labels" / "r1.jsonl").read_bytes()
    app = StudioApp(pack, "r1", port=0, session=RaterSession(pack, "r1", opener=Full))
    page, _ = open_page(browser, app.start())
    try:
        type_label(page, [3, 3, 3, 3], "p")
        wait_js(page, "document.getElementById('status').textContent.includes('NOT SAVED: the disk is full')")
        assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('axon-studio-outbox'))"
                             ".map(k => JSON.parse(localStorage[k]).length)") == [1]  # kept for the retry
    finally:
        app.stop()
        page.close()
    assert (pack / "labels" / "r1.jsonl").read_bytes() == before  # nothing already saved touched
