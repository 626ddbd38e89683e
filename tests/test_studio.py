"""The labelling studio without a browser: the assignment's law, the journal's durability, the blind
payload (a canary in every judge field never reaches a response), the request guard, and the CLI from
``label init`` to ``label export`` read back by ``import-labels``' reader."""

from __future__ import annotations

import errno
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.cli import main
from axon_eval.rubric import DIMENSIONS
from axon_eval.studio import blind, ledger as journal
from axon_eval.studio.assignment import plan_assignment
from axon_eval.studio.pack import init_pack
from axon_eval.studio.server import STATIC_FILES, StudioApp
from axon_eval.studio.session import LabelInvalid, RaterSession

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"


# -- assignment --------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 60), n_raters=st.integers(1, 4), data=st.data(), seed=st.integers(0, 2**31))
def test_assignment_law(n, n_raters, data, seed):
    ids = [f"s{i}" for i in range(n)]
    raters = [f"r{j}" for j in range(n_raters)]
    k = data.draw(st.integers(0, n))
    batches = {s: data.draw(st.integers(1, 3)) for s in ids}
    a = plan_assignment(ids, raters, k, seed, batches)
    held = [s for q in a.queues.values() for s in q]
    assert set(held) == set(ids)  # every segment assigned
    overlap = set(a.overlap)
    assert len(overlap) == (n if n_raters == 1 else k)
    for q in a.queues.values():
        assert overlap <= set(q) and len(set(q)) == len(q)  # the overlap in every queue, nothing twice
        assert [batches[s] for s in q] == sorted(batches[s] for s in q)  # earlier batches first
    rest = [s for s in held if s not in overlap]
    assert len(rest) == len(set(rest)) == n - len(overlap)  # the rest labelled by exactly one rater
    shares = [len(q) - len(overlap) for q in a.queues.values()]
    assert max(shares) - min(shares) <= 1
    again = plan_assignment(ids, raters, k, seed, batches)
    assert again.queues == a.queues and again.overlap == a.overlap  # deterministic per seed


def test_assignment_seed_changes_order_and_refuses_bad_input():
    ids = [f"s{i}" for i in range(40)]
    a, b = plan_assignment(ids, ["x", "y"], 10, 1), plan_assignment(ids, ["x", "y"], 10, 2)
    assert a.queues != b.queues
    with pytest.raises(ValueError, match="overlap 41"):
        plan_assignment(ids, ["x", "y"], 41, 1)
    with pytest.raises(ValueError, match="given twice"):
        plan_assignment(ids, ["x", "x"], 1, 1)
    with pytest.raises(ValueError, match="reserved"):
        plan_assignment(ids, ["adjudicated"], 1, 1)


# -- journal -------------------------------------------------------------------------------------------
def test_journal_is_idempotent_and_amendments_supersede(tmp_path):
    j = journal.Journal(tmp_path / "labels" / "r1.jsonl")
    first = j.append({"id": "a" * 10, "segment_id": "s1", "verdict": "good"})
    again = j.append({"id": "a" * 10, "segment_id": "s1", "verdict": "good"})
    amend = j.append({"id": "b" * 10, "segment_id": "s1", "verdict": "poor", "amends": "a" * 10})
    assert not first.duplicate and again.duplicate and again.line == 1 and amend.line == 2
    j.close()
    lines = (tmp_path / "labels" / "r1.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["a" * 10, "b" * 10]
    assert journal.Journal(tmp_path / "labels" / "r1.jsonl").latest()["s1"]["verdict"] == "poor"


def test_journal_repairs_a_half_written_last_line(tmp_path):
    path = tmp_path / "r1.jsonl"
    good = json.dumps({"id": "x" * 10, "segment_id": "s1"}) + "\n"
    torn = '{"id": "yyyyyyyyyy", "segm'
    path.write_text(good + torn)
    j = journal.Journal(path)
    assert len(j.repairs) == 1 and "half-written" in str(j.repairs[0]) and j.repairs[0].n_bytes == len(torn)
    assert path.read_text() == good and [r["id"] for r in j] == ["x" * 10]
    assert (tmp_path / "r1.jsonl.torn").read_text().splitlines()[1] == '{"id": "yyyyyyyyyy", "segm'
    j.append({"id": "z" * 10, "segment_id": "s2"})
    assert len(path.read_text().splitlines()) == 2


class FullDisk:
    """A file at the OS boundary that accepts ``room`` bytes, then fails like a full disk."""

    def __init__(self, path, room):
        self.fh = open(path, "ab", buffering=0)  # noqa: SIM115
        self.room = room

    def write(self, data):
        if len(data) > self.room:
            if self.room:
                self.fh.write(bytes(data[: self.room]))
                self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.fh.write(data)

    def flush(self):
        self.fh.flush()

    def fileno(self):
        return self.fh.fileno()

    def close(self):
        self.fh.close()


def test_full_disk_keeps_what_was_saved_and_says_so(tmp_path):
    path = tmp_path / "r1.jsonl"
    first = json.dumps({"id": "a" * 10}, separators=(",", ":")).encode() + b"\n"
    rooms = iter([len(first) + 7, 0])
    j = journal.Journal(path, opener=lambda p: FullDisk(p, next(rooms)))
    j.append({"id": "a" * 10})
    before = path.read_bytes()
    with pytest.raises(journal.JournalWriteError, match="NOT SAVED: the disk is full") as info:
        j.append({"id": "b" * 10, "comment": "x" * 100})
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before == first  # the 7 bytes that got through were cut away again
    assert j.line_of("b" * 10) is None


def test_fsync_failure_is_not_acknowledged(tmp_path, monkeypatch):
    path = tmp_path / "r1.jsonl"
    j = journal.Journal(path)
    j.append({"id": "a" * 10})

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(journal.JournalWriteError):
        j.append({"id": "b" * 10})
    monkeypatch.undo()
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["a" * 10]


# -- packs: a run whose judge fields hold canaries -------------------------------------------------------
@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name="studio",
                         progress=False, cache=False)


CANARY = "CANARY"


def canary_pack(run, folder: Path, n: int = 16) -> tuple[Path, list[str]]:
    """A pack whose source run's audit, results and design hold a unique canary in every judge and design
    field; returns the pack and the canaries."""
    import shutil

    src = folder / "run"
    shutil.copytree(run.run_dir, src)
    canaries: list[str] = []

    def c(kind: str) -> str:
        canaries.append(f"{CANARY}{kind}{len(canaries):05d}Z")
        return canaries[-1]

    entries = [json.loads(x) for x in (src / "audit.jsonl").read_text().splitlines()]
    for e in entries:
        e["judge_id"], e["rubric_id"], e["view_sha256"] = c("judge"), c("rubric"), c("view")
        e["verdict"] = {**{d: 7 for d in DIMENSIONS}, "verdict": c("verdict"), "explanation": c("expl")}
        e["score"] = {"band": c("band"), "score": c("score"), "subscores": {d: c("sub") for d in DIMENSIONS}}
        e["model"], e["run_id"] = c("model"), c("run")
    (src / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    sample = labelling.sample_for_labelling(runs.load_run(src), n, seed=3)
    pack = labelling.write_labelling_pack(sample, runs.load_run(src), folder / "pack")
    design = json.loads((pack / "design.json").read_text())
    for seg in design["segments"]:
        seg["stratum"] = c("stratum")
        seg["inclusion_probability"] = 0.123456 + len(canaries) * 1e-9
        canaries.append(repr(seg["inclusion_probability"]))
        seg["weight"] = 1 / seg["inclusion_probability"]
        canaries.append(repr(seg["weight"]))
    design["judge_id"], design["source_run"] = c("djudge"), str(src)
    (pack / "design.json").write_text(json.dumps(design))
    return pack, canaries


def fetch(app, path, body=None, token=None, **headers):
    h = {"Authorization": f"Bearer {app.token if token is None else token}", **headers}
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(f"http://127.0.0.1:{app.port}{path}", data=data, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def label_body(item, rid, verdict="good", value=6):
    ev = item["evidence"]
    scores = {d: value for d in DIMENSIONS}
    if not ev["answer_captured"]:
        scores["answer_faithfulness"] = None
    return {"id": rid, "position": item["position"], "segment_id": ev["segment_id"], "scores": scores,
            "verdict": verdict, "comment": "", "seconds": 3.5}


@pytest.fixture(scope="module")
def canaried(run, tmp_path_factory):
    pack, canaries = canary_pack(run, tmp_path_factory.mktemp("canary"))
    init_pack(pack, ["r1", "r2"], 4, 0)
    return pack, canaries


def test_no_judge_or_design_field_reaches_any_response(canaried):
    pack, canaries = canaried
    # a second rater's label on every shared segment: it must never be shown to r1 either
    other = RaterSession(pack, "r2")
    for i in range(len(other.queue)):
        item = other.item(i)
        other.save({**label_body(item, f"OTHERRATER{i:04d}", "poor", 1), "comment": f"{CANARY}other{i}"})
    other.close()
    canaries = [*canaries, *(f"OTHERRATER{i:04d}" for i in range(len(other.queue))), f"{CANARY}other"]
    app = StudioApp(pack, "r1", port=0)
    app.start()
    try:
        bodies = [fetch(app, "/api/session")[1], fetch(app, "/")[1]]
        bodies += [fetch(app, f"/static/{name}")[1] for name in STATIC_FILES]
        total = json.loads(bodies[0])["progress"]["total"]
        for i in range(total):
            status, text, _ = fetch(app, f"/api/item/{i}")
            assert status == 200
            bodies.append(text)
            saved = fetch(app, "/api/label", label_body(json.loads(text), f"mine{i:06d}"))
            assert saved[0] == 200, saved[1]
            bodies.append(saved[1])
            bodies.append(fetch(app, f"/api/item/{i}")[1])  # with the rater's own label now
        bodies.append(fetch(app, "/api/item/99999")[1])
        bodies.append(fetch(app, "/api/label", {"id": "bad"})[1])
    finally:
        app.stop()
    everything = "\n".join(bodies)
    leaked = [c for c in canaries if c in everything]
    assert not leaked, leaked[:5]
    assert CANARY not in everything
    assert CANARY not in (pack / "studio" / "evidence.jsonl").read_text()
    # ... while the record on disk keeps the inclusion probability the design gave
    rec = json.loads((pack / "labels" / "r1.jsonl").read_text().splitlines()[0])
    design = {s["segment_id"]: s for s in json.loads((pack / "design.json").read_text())["segments"]}
    assert rec["inclusion_probability"] == design[rec["segment_id"]]["inclusion_probability"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret=st.text(min_size=6, max_size=30).filter(lambda s: s.strip() == s and len(set(s)) > 3))
def test_blind_item_is_an_allow_list(secret):
    # any value under any key the allow-list does not name stays out of the payload
    entry = {"segment_id": "s#1", "turn_id": "t", "segment_index": 1, "n_segments": 1, "question": "q?",
             "answer": "a", "surface": "web", "steps": [{"kind": "sql", "sql": "SELECT 1", "status": "ok",
                                                          "columns": ["x"], "rows": [[1]], "row_count": 1,
                                                          "judge_note": secret}],
             "verdict": {"explanation": secret}, "score": {"band": secret}, "judge_id": secret, secret: secret}
    out = json.dumps(blind.blind_item(entry), ensure_ascii=False)
    assert secret not in out and json.dumps(secret, ensure_ascii=False)[1:-1] not in out


def test_bundled_segment_shows_the_whole_message_with_its_part():
    entry = {"segment_id": "t#2", "question": "and in 2022?", "n_segments": 2, "segment_index": 2, "steps": []}
    out = blind.blind_item(entry, message="Who won in 2021, and in 2022?", parts=["Who won in 2021", "and in 2022?"])
    m = out["bundled"]["message"]
    assert m["text"][m["start"]:m["end"]] == "and in 2022?" and out["bundled"]["index"] == 2


def test_rubric_guide_reads_every_anchor_of_the_judge_prompt():
    from axon_eval.judges.prompt import load_prompt

    text = load_prompt("judge_v1").text
    guide = blind.rubric_guide(text)
    assert [d["name"] for d in guide["dimensions"]] == list(DIMENSIONS)
    for d in guide["dimensions"]:
        for k in ("10", "5", "0"):
            assert f"- {k}: {d['anchors'][k]}" in text  # verbatim from the prompt
    assert all(v["meaning"] for v in guide["verdicts"])


# -- the guard --------------------------------------------------------------------------------------------
def test_request_guard(canaried):
    pack, _ = canaried
    app = StudioApp(pack, "r1", port=0)
    app.start()
    try:
        assert fetch(app, "/api/session", token="wrong")[0] == 401
        assert fetch(app, "/api/session", token="")[0] == 401
        assert fetch(app, "/api/session", Host="attacker.example:80")[0] == 403  # DNS rebinding
        assert fetch(app, "/api/session", Origin="http://127.0.0.1:1")[0] == 403
        assert fetch(app, "/api/session", **{"Sec-Fetch-Site": "same-site"})[0] == 403
        assert fetch(app, "/static/app.js", **{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"})[0] == 403
        # a link from a notebook on another loopback port opens the page (it holds no data)
        assert fetch(app, "/", **{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"})[0] == 200
        assert fetch(app, "/api/session", **{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"})[0] == 403
        assert fetch(app, "/api/label", b'{"id": "x"}', **{"Content-Type": "text/plain"})[0] == 415
        assert fetch(app, "/api/label", b"{" + b" " * 70000 + b"}")[0] == 413
        status, text, headers = fetch(app, "/")
        assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff" and "<script type=\"module\"" in text
        assert fetch(app, "/nothing")[0] == 404
    finally:
        app.stop()


def test_review_mode_needs_the_token_and_shows_no_judge_before_the_reviewers_own_label(run, tmp_path):
    pack, canaries = canary_pack(run, tmp_path)
    init_pack(pack, ["r1", "r2", "r3"], 4, 0)
    typed: dict[tuple[str, str], dict] = {}
    for rater, verdict, value in (("r2", "poor", 1), ("r3", "good", 9)):
        s = RaterSession(pack, rater)
        for i in range(len(s.queue)):
            body = {**label_body(s.item(i), f"{rater}-lab-{i:04d}", verdict, value), "comment": f"note of {rater} {i}"}
            s.save(body)
            typed[(body["segment_id"], rater)] = body
        s.close()
    app = StudioApp.for_review(pack, "r1", port=0)
    app.start()
    adjudicated, reveals = pack / "labels" / "adjudicated.jsonl", pack / "labels" / "reveals.jsonl"
    try:
        # the same guard as the rater's server: the token on every call, the Host checked
        for path, body in (("/api/session", None), ("/api/item/0", None), ("/api/judge", {"position": 0}),
                           ("/api/label", {"id": "x" * 10, "position": 0})):
            assert fetch(app, path, body, token="wrong")[0] == 401
            assert fetch(app, path, body, token="")[0] == 401
        assert fetch(app, "/api/session", Host="attacker.example:80")[0] == 403
        assert fetch(app, "/api/judge", b"{}", **{"Content-Type": "text/plain"})[0] == 415
        assert not adjudicated.read_text() and not reveals.read_text()
        status, page, headers = fetch(app, "/")
        assert status == 200 and "/static/review.js" in page and "script-src 'self'" in headers["Content-Security-Policy"]
        bodies = [page, fetch(app, "/api/session")[1], *(fetch(app, f"/static/{n}")[1] for n in STATIC_FILES)]
        state = json.loads(bodies[1])
        overlap = json.loads((pack / "assignment.json").read_text())["overlap"]
        assert state["progress"]["total"] == len(overlap) == 4  # every overlap segment: poor 1 against good 9
        items = []
        for i in range(state["progress"]["total"]):
            status, text, _ = fetch(app, f"/api/item/{i}")
            assert status == 200
            bodies.append(text)
            item = json.loads(text)
            items.append(item)
            sid = item["evidence"]["segment_id"]
            assert not item["can_show_judge"] and not item["judge_shown_before"]
            # the raters' labels side by side, as they were saved
            for r in item["raters"]:
                want = typed[(sid, r["rater"])]
                assert [r[d] for d in DIMENSIONS] == [want["scores"][d] for d in DIMENSIONS]
                assert (r["verdict"], r["comment"]) == (want["verdict"], want["comment"])
            assert sorted(r["rater"] for r in item["raters"]) == ["r2", "r3"]
            hidden = fetch(app, "/api/judge", {"position": i})
            assert hidden[0] == 403 and "label it yourself first" in hidden[1]
            bodies.append(hidden[1])
        first = label_body(items[0], "adjudication-0001", "partial", 5)
        saved = fetch(app, "/api/label", first)
        assert saved[0] == 200 and json.loads(saved[1])["progress"]["done"] == 1
        bodies += [saved[1], fetch(app, "/api/item/0")[1]]
        assert fetch(app, "/api/label", {**first, "id": "adjudication-0002", "skip": "no"})[0] == 422
        everything = "\n".join(bodies)
        leaked = [c for c in canaries if c in everything]
        assert not leaked and CANARY not in everything, leaked[:5]
        assert not reveals.read_text()
        # once the reviewer has saved their own label of the segment, the judge's grades come on request
        sid = items[0]["evidence"]["segment_id"]
        mine = RaterSession(pack, "r1")
        position = mine.queue.index(sid)
        mine.save(label_body(mine.item(position), "r1-own-00001", "good", 7))
        mine.close()
        assert json.loads(fetch(app, "/api/item/0")[1])["can_show_judge"]
        assert fetch(app, "/api/judge", {"position": 1})[0] == 403  # still hidden where r1 has no label
        status, text, _ = fetch(app, "/api/judge", {"position": 0})
        assert status == 200
        grades = runs.load_run(json.loads((pack / "design.json").read_text())["source_run"]).results
        row = grades.drop_duplicates("segment_id").set_index("segment_id").loc[sid]
        judge = json.loads(text)["judge"]
        assert judge["verdict"] == row["judge_verdict"]
        assert all(judge[d] == (None if pd.isna(row[d]) else row[d]) for d in DIMENSIONS)
        shown = [json.loads(x) for x in reveals.read_text().splitlines()]
        assert [(r["reviewer"], r["segment_id"]) for r in shown] == [("r1", sid)]
        again = label_body(items[0], "adjudication-0003", "poor", 4)
        assert fetch(app, "/api/label", {**again, "amends": "adjudication-0001"})[0] == 200
    finally:
        app.stop()
    recs = [json.loads(x) for x in adjudicated.read_text().splitlines()]
    assert [(r["id"], r["reviewer"], r["judge_shown_before"]) for r in recs] == [
        ("adjudication-0001", "r1", False), ("adjudication-0003", "r1", True)]
    assert recs[0]["verdict"] == "partial" and sorted(recs[0]["settles"]) == ["r2", "r3"]
    for rater, source in recs[0]["settles"].items():  # each settled label is the rater's journal line of sid
        path, line = source.rsplit(":", 1)
        assert json.loads((pack / path).read_text().splitlines()[int(line) - 1])["segment_id"] == sid


def test_static_page_never_parses_evidence_as_html():
    static = ROOT / "axon_eval" / "studio" / "static"
    for path in static.glob("*.js"):
        text = path.read_text()
        for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert bad not in text, (path.name, bad)


def test_bad_labels_are_refused_with_the_field(canaried):
    pack, _ = canaried
    s = RaterSession(pack, "r1")
    try:
        item = s.item(0)
        body = label_body(item, "valid-id-0001")
        with pytest.raises(LabelInvalid, match="verdict"):
            s.save({**body, "verdict": "great"})
        with pytest.raises(LabelInvalid, match="sql_quality"):
            s.save({**body, "scores": {**body["scores"], "sql_quality": 11}})
        with pytest.raises(LabelInvalid, match="segment_id"):
            s.save({**body, "segment_id": "nope"})
        with pytest.raises(LabelInvalid, match="skip"):
            s.save({**body, "skip": "  "})
    finally:
        s.close()


# -- the CLI from init to export ---------------------------------------------------------------------------
def test_cli_init_status_review_export(run, tmp_path, capsys):
    sample = labelling.sample_for_labelling(run, 12, seed=2)
    pack = labelling.write_labelling_pack(sample, run, tmp_path / "pack")
    assert main(["label", "init", str(pack), "--raters", "r1,r2,r3", "--overlap", "6", "--seed", "4"]) == 0
    assert main(["label", "init", str(pack), "--raters", "r1", "--overlap", "0"]) == 2  # never overwritten
    capsys.readouterr()
    typed: dict[tuple[str, str], dict] = {}
    for k, rater in enumerate(["r1", "r2", "r3"]):
        s = RaterSession(pack, rater)
        for i in range(len(s.queue)):
            item = s.item(i)
            verdict = ["good", "partial", "poor"][(i + k) % 3] if i % 2 else "good"
            body = label_body(item, f"{rater}-label-{i:04d}", verdict, (i * 3 + k) % 11)
            s.save(body)
            typed[(item["evidence"]["segment_id"], rater)] = body
        if rater == "r1":  # an amendment of the first label supersedes it
            item = s.item(0)
            body = label_body(item, "r1-amend-00000", "poor", 2)
            s.save({**body, "amends": item["label"]["id"]})
            typed[(item["evidence"]["segment_id"], "r1")] = body
        s.close()
    assert main(["label", "status", str(pack), "--json", "--n-boot", "100"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [p["todo"] for p in status["progress"]] == [0, 0, 0]
    assert status["agreement"]["n_segments"] == 6 and len(status["agreement"]["kappa"]) == 3
    assert main(["label", "review", str(pack), "--threshold", "1", "--json"]) == 0
    queue = json.loads(capsys.readouterr().out)
    assert queue, "raters who differ must be queued"
    sid = queue[0]["segment_id"]
    answered = any(v["answer_faithfulness"] is not None for v in queue[0]["labels"].values())
    assert main(["label", "review", str(pack), "--adjudicate", sid, "--reviewer", "lead", "--scores",
                 "5,5,5," + ("5" if answered else "-"), "--verdict", "partial"]) == 0
    # the judge is shown to a reviewer only on segments they labelled, and the showing is recorded
    assert main(["label", "review", str(pack), "--threshold", "1", "--reviewer", "r1", "--show-judge"]) == 0
    shown = capsys.readouterr().out
    r1 = {json.loads(x)["segment_id"] for x in (pack / "labels" / "r1.jsonl").read_text().splitlines()}
    for item in queue:
        assert (f"{item['segment_id']}: judge " in shown) == (item["segment_id"] in r1)
    reveals = [json.loads(x) for x in (pack / "labels" / "reveals.jsonl").read_text().splitlines()]
    assert {r["segment_id"] for r in reveals} == {q["segment_id"] for q in queue} & r1
    adjudicated = json.loads((pack / "labels" / "adjudicated.jsonl").read_text().splitlines()[0])
    assert adjudicated["reviewer"] == "lead" and adjudicated["judge_shown_before"] is False
    assert main(["label", "export", str(pack)]) == 0
    assert main(["label", "export", str(pack), "--adjudicated"]) == 0
    capsys.readouterr()
    # the export read back by import-labels' own reader, checked against the ids of the pack
    known = dict(zip(labelling.design_frame(pack / "design.json")["segment_id"],
                     labelling.design_frame(pack / "design.json")["answer_captured"], strict=True))
    read, problems = labelling.import_labels(pack / "studio.imported.csv", known)
    assert problems == [] and len(read) == len(typed)
    for row in read.itertuples(index=False):
        body = typed[(row.segment_id, row.rater)]
        assert row.verdict == body["verdict"]
        for d in DIMENSIONS:
            want = body["scores"][d]
            got = getattr(row, d)
            assert (pd.isna(got) and want is None) or got == want
    design = labelling.design_frame(pack / "design.json").set_index("segment_id")
    assert (read.set_index("segment_id")["inclusion_probability"]
            == design.loc[read["segment_id"], "inclusion_probability"].to_numpy()).all()
    adj, problems = labelling.import_labels(pack / "studio-adjudicated.csv", known)
    assert problems == [] and list(adj["rater"]) == ["adjudicated"] and list(adj["segment_id"]) == [sid]
    # the studies' reader takes the pack folder and finds the studio's labels with the design weights
    from axon_eval.calibration.corrected import run_labels

    rl = run_labels(run, pack)
    assert rl.path.name == "studio.imported.csv" and rl.design is not None
    # an adjudication by a reviewer who was shown the judge says so
    seen = next(q for q in queue if q["segment_id"] in r1)
    faith = "5" if any(v["answer_faithfulness"] is not None for v in seen["labels"].values()) else "-"
    assert main(["label", "review", str(pack), "--threshold", "1", "--adjudicate", seen["segment_id"], "--reviewer",
                 "r1", "--scores", "4,4,4," + faith, "--verdict", "poor"]) == 0
    last = json.loads((pack / "labels" / "adjudicated.jsonl").read_text().splitlines()[-1])
    assert last["reviewer"] == "r1" and last["judge_shown_before"] is True


def test_notebook_studio_link(canaried):
    from axon_eval.calibration import studio

    pack, _ = canaried
    link = studio(pack, rater="r2", display=False)
    try:
        assert link.url.startswith("http://127.0.0.1:") and "#t=" in link.url
        assert 'target="_blank"' in link._repr_html_()
        port = int(link.url.split(":")[2].split("/")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            assert resp.status == 200
    finally:
        link.stop()


def test_full_disk_is_a_clear_answer_to_the_page(canaried, tmp_path):
    import shutil

    pack = tmp_path / "pack"
    shutil.copytree(canaried[0], pack)
    shutil.rmtree(pack / "labels")
    session = RaterSession(pack, "r1", opener=lambda p: FullDisk(p, 0))
    app = StudioApp(pack, "r1", port=0, session=session)
    app.start()
    try:
        item = json.loads(fetch(app, "/api/item/0")[1])
        status, text, _ = fetch(app, "/api/label", label_body(item, "fulldisk0001"))
        assert status == 507 and "NOT SAVED: the disk is full" in json.loads(text)["error"]
        assert json.loads(fetch(app, "/api/session")[1])["progress"]["done"] == 0
    finally:
        app.stop()
    assert (pack / "labels" / "r1.jsonl").read_bytes() == b""


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n_units=st.integers(3, 25), n_raters=st.integers(2, 4), level=st.sampled_from(["interval", "ordinal"]))
def test_coincidence_alpha_equals_the_krippendorff_package(data, n_units, n_raters, level):
    import krippendorff
    import numpy as np

    from axon_eval.studio.status import alpha_from_coincidences, unit_coincidences

    cells = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 10)), min_size=n_units * n_raters,
                               max_size=n_units * n_raters))
    grid = np.array([np.nan if c is None else float(c) for c in cells]).reshape(n_raters, n_units)
    pairable = (~np.isnan(grid)).sum(axis=0) >= 2
    if np.unique(grid[:, pairable][~np.isnan(grid[:, pairable])]).size < 2:
        return  # alpha undefined: nothing to compare
    per_unit, values = unit_coincidences(grid)
    ours = alpha_from_coincidences(per_unit.sum(axis=0)[None], values, level)[0]
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=grid, level_of_measurement=level), abs=1e-9)


def test_kappa_interval_point_is_cohens_kappa():
    from sklearn.metrics import cohen_kappa_score

    from axon_eval.studio.status import kappa_interval

    a = ["good", "good", "poor", "partial", "good", "poor", "partial", "good", "poor", "good"] * 5
    b = ["good", "partial", "poor", "partial", "good", "good", "partial", "good", "poor", "poor"] * 5
    out = kappa_interval(a, b, n_boot=300, seed=1)
    assert out["kappa"] == pytest.approx(cohen_kappa_score(a, b))
    assert out["lo"] < out["kappa"] < out["hi"] and out["asymptotic"][0] < out["kappa"] < out["asymptotic"][1]


def test_bench_section_runs_quick():
    from axon_eval.bench.studio import bench_studio

    rows = bench_studio(quick=True)
    assert [r["unit"] for r in rows] == ["s", "ms", "ms", "s"]
    assert all(r["value"] > 0 and r["ok"] is None for r in rows)  # quick: measured, not judged


def test_init_without_raters_is_refused_unless_it_extends(run, tmp_path, capsys):
    pack = tmp_path / "pack"
    assert main(["sample-for-labelling", str(run.run_dir), "--n", "6", "--seed", "1", "--out", str(pack)]) == 0
    capsys.readouterr()
    assert main(["label", "init", str(pack)]) == 2
    assert "needs --raters" in capsys.readouterr().err and not (pack / "assignment.json").exists()
    assert main(["label", "init", str(pack), "--extend"]) == 2  # nothing assigned yet to extend
    assert "run python -m axon_eval label init" in capsys.readouterr().err


def test_active_design_queue_runs_batch_by_batch_and_extends(run, tmp_path, capsys):
    pack = tmp_path / "apack"
    base = ["sample-for-labelling", str(run.run_dir), "--design", "active", "--budget", "10", "--signal",
            "column:disagreement"]
    assert main([*base, "--seed", "1", "--out", str(pack)]) == 0
    assert main(["label", "init", str(pack), "--raters", "a,b", "--overlap", "3", "--seed", "1"]) == 0
    first = json.loads((pack / "assignment.json").read_text())
    assert main(["label", "export", str(pack)]) == 2 and not (pack / "studio.imported.csv").exists()  # nothing saved
    assert main([*base, "--seed", "2", "--next-batch", str(pack)]) == 0
    assert main(["label", "init", str(pack), "--raters", "b,c", "--extend"]) == 2  # not the assigned raters
    assert "differs from the pack's assignment (a,b)" in capsys.readouterr().err
    assert json.loads((pack / "assignment.json").read_text()) == first  # refused: nothing written
    assert main(["label", "init", str(pack), "--extend"]) == 0  # the raters are the assignment's
    capsys.readouterr()
    after = json.loads((pack / "assignment.json").read_text())
    design = json.loads((pack / "design.json").read_text())
    batch2 = set(design["batches"][1]["new_segments"])
    for rater, queue in after["queues"].items():
        assert queue[: len(first["queues"][rater])] == first["queues"][rater]  # what was assigned stays
        assert all(after["batches"][s] == 2 for s in queue[len(first["queues"][rater]):])
    held = {s for q in after["queues"].values() for s in q}
    assert held == {s["segment_id"] for s in design["segments"]} and batch2 <= held
    s = RaterSession(pack, "a")
    try:
        item = s.item(len(first["queues"]["a"]))  # the first segment of batch 2
        s.save(label_body(item, "batch2-label-01"))
        rec = json.loads((pack / "labels" / "a.jsonl").read_text())
        want = next(x for x in design["segments"] if x["segment_id"] == rec["segment_id"])
        assert rec["batch"] == 2 and rec["inclusion_probability"] == want["inclusion_probability"]
    finally:
        s.close()
