"""Labelling packs are blind by construction, and a bundled question's page shows what was graded.

Oracles written here: a judge whose every free-text field (explanation, judge id, model, prompt version,
record extension) and whose run name hold unique canary strings, none of which may appear in a rater's
sheet, pages or index; the same pack written from a run of another judge is byte-identical (the pages
read nothing of the judge); the inclusion probabilities the import gives are ``probabilities.csv``'s
(the draw's own record) and ``1 / weight``; the bundled sample's messages and answers read from
``data/turns/sample_turns.jsonl`` with :mod:`json`, and the answer part the offline judge graded
(:func:`axon_eval.judges.heuristic.answer_for_segment` on the rendered view).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.cli import main
from axon_eval.judges.base import Judge, JudgeRecord
from axon_eval.judges.heuristic import HeuristicJudge, answer_for_segment
from axon_eval.labels import load_labels
from axon_eval.rubric import DIMENSIONS

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LABELS = ROOT / "data" / "turns" / "labels.csv"

CANARIES = ("cnry-explanation-5b1e", "cnry-judge-9d2a", "cnry-model-47f0", "cnry-prompt-c3e8", "cnry-extra-1a6d",
            "cnry-run-e07b")


class CanaryJudge(Judge):
    """The offline judge's grades, with a canary in every free-text field of the record."""

    judge_id = CANARIES[1]
    model = CANARIES[2]
    prompt_version = CANARIES[3]

    def __init__(self) -> None:
        self.inner = HeuristicJudge()

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        verdict = self.inner.judge(view, sample_index).verdict
        verdict = verdict.model_copy(update={"explanation": f"{CANARIES[0]}: {verdict.explanation}"})
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index, verdict=verdict,
                           cost_usd=0.0, extra={"canary": CANARIES[4]})


@pytest.fixture(scope="module")
def canary_run(tmp_path_factory):
    return runs.evaluate(SAMPLE, CanaryJudge(), "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name=CANARIES[5],
                         progress=False, cache=False)


@pytest.fixture(scope="module")
def rules_run(tmp_path_factory):
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=tmp_path_factory.mktemp("runs"), name="rules",
                         progress=False, cache=False)


def _rater_files(pack: Path) -> dict[str, bytes]:
    """Every file a rater is handed: the sheet(s), the index and the segment pages."""
    files = [*pack.glob("sheet*.csv"), pack / "index.html", *sorted((pack / "segments").glob("*.html"))]
    return {str(f.relative_to(pack)): f.read_bytes() for f in files if not f.name.endswith(".imported.csv")}


def _fill(sheet: Path, constructed: pd.DataFrame, rater: str = "r1") -> None:
    """A stand-in rater: the constructed labels' midpoints, keeping whatever columns the sheet has."""
    lab = constructed.set_index("segment_id")
    with sheet.open() as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    for r in rows[1:]:
        seg = lab.loc[r[0]]
        for d in DIMENSIONS:
            lo = seg[f"{d}_min"]
            r[header.index(d)] = "" if pd.isna(lo) else str(int((lo + seg[f"{d}_max"]) // 2))
        r[header.index("verdict")], r[header.index("rater")] = seg["verdict"], rater
    with sheet.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)


@pytest.mark.parametrize("design", ["stratified", "active"])
def test_a_rater_sees_nothing_of_the_judge_or_the_design(canary_run, rules_run, design, tmp_path, capsys):
    assert CANARIES[5] in canary_run.run_dir.name and canary_run.manifest.judge_id == CANARIES[1]
    # an active design on the judge's own score: the probabilities track the judge's opinion
    signal = labelling.load_signal("column:score", canary_run) if design == "active" else None
    sample = labelling.draw_design_sample(canary_run, design, 24, signal=signal, seed=5)
    pack = labelling.write_labelling_pack(sample, canary_run, tmp_path / "pack")
    seen = _rater_files(pack)
    probs = pd.read_csv(pack / "probabilities.csv").set_index("segment_id")["inclusion_probability"]
    d = json.loads((pack / "design.json").read_text())
    drawn = [s["segment_id"] for s in d["segments"]]
    assert len(drawn) == 24 and len(seen) == 2 + 24
    assert len(set(probs[drawn].round(6))) > 1  # unequal probabilities: reading them would leak the judge
    with (pack / "sheet.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["segment_id", *DIMENSIONS, "verdict", "rater", "comment"]
    assert [r[0] for r in rows[1:]] == sorted(drawn) and all(v == "" for r in rows[1:] for v in r[1:])
    audit = {e["segment_id"]: e for e in canary_run.iter_audit()}
    for name, data in seen.items():
        text = data.decode("utf-8")
        for canary in CANARIES:
            assert canary not in text, (name, canary)
        for sid in drawn:  # no probability or weight, in any of the ways they are written
            for form in (f"{v:{f}}" for v in (probs[sid], 1 / probs[sid]) for f in (".10g", ".4f", ".3f")):
                assert "." not in form or form not in text, (name, sid, form)
        lowered = re.sub(r"<style>.*?</style>", "", text, flags=re.S).lower()  # words the sample's evidence never holds
        for word in ("stratum", "strata", "inclusion", "weight", "band", "judge", "explanation"):
            assert word not in lowered, (name, word)
        if name.startswith("segments/"):
            sid = next(s for s in drawn if labelling.page_name(s) == Path(name).name)
            assert audit[sid]["verdict"]["explanation"].split(": ", 1)[1][:40] not in text
    # the pack a rater gets is the same whatever judged the run: nothing of the judgement is read
    other = labelling.write_labelling_pack(sample, rules_run, tmp_path / "other")
    assert _rater_files(other) == seen
    assert CANARIES[1] in (pack / "design.json").read_text()  # the design keeps where it came from

    # import: the probabilities come from design.json, equal to the draw's record
    constructed = load_labels(LABELS)
    _fill(pack / "sheet.csv", constructed)
    capsys.readouterr()
    assert main(["import-labels", str(pack / "sheet.csv")]) == 0
    assert "inclusion probabilities from" in capsys.readouterr().out
    imported = pd.read_csv(pack / "sheet.imported.csv").set_index("segment_id")
    assert imported["inclusion_probability"].to_dict() == pytest.approx(probs[imported.index].to_dict(), rel=1e-12)
    assert imported["weight"].to_dict() == pytest.approx((1 / probs[imported.index]).to_dict(), rel=1e-12)
    # study 09's and compare's reader takes the same weights from the pack
    from axon_eval.calibration.corrected import run_labels

    for labels in (pack, pack / "sheet.imported.csv", pack / "sheet.csv"):  # the pack, its import, its sheet
        weights = run_labels(canary_run, labels).design.set_index("segment_id")["weight"]
        assert weights.to_dict() == pytest.approx((1 / probs[drawn]).to_dict(), rel=1e-12), labels


def test_an_old_sheet_with_the_probability_column_still_imports(canary_run, tmp_path, capsys):
    sample = labelling.draw_design_sample(canary_run, "stratified", 16, seed=2)
    pack = labelling.write_labelling_pack(sample, canary_run, tmp_path / "pack")
    probs = pd.read_csv(pack / "probabilities.csv").set_index("segment_id")["inclusion_probability"]
    # the sheet as packs used to write it: the probability after the rater's columns
    with (pack / "sheet.csv").open() as fh:
        rows = list(csv.reader(fh))
    rows = [[*rows[0], "inclusion_probability"], *([*r, f"{probs[r[0]]:.10g}"] for r in rows[1:])]
    with (pack / "sheet.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    _fill(pack / "sheet.csv", load_labels(LABELS))
    assert main(["import-labels", str(pack / "sheet.csv")]) == 0
    imported = pd.read_csv(pack / "sheet.imported.csv").set_index("segment_id")
    assert len(imported) == 16
    assert imported["inclusion_probability"].to_dict() == pytest.approx(probs[imported.index].to_dict(), rel=1e-9)
    # a copy away from its pack: checked against the run, the pack's design named, or the old column read
    away = tmp_path / "away"
    away.mkdir()
    (away / "sheet.csv").write_bytes((pack / "sheet.csv").read_bytes())
    assert main(["import-labels", str(away / "sheet.csv"), "--run", str(canary_run.run_dir),
                 "--design", str(pack / "design.json"), "--out", str(away / "a.csv")]) == 0
    assert pd.read_csv(away / "a.csv").set_index("segment_id")["weight"].to_dict() == pytest.approx(
        (1 / probs[imported.index]).to_dict(), rel=1e-9)
    assert main(["import-labels", str(away / "sheet.csv"), "--run", str(canary_run.run_dir), "--out",
                 str(away / "b.csv")]) == 0
    assert "the sheet's inclusion_probability column" in capsys.readouterr().out
    old = pd.read_csv(away / "b.csv").set_index("segment_id")["inclusion_probability"]
    assert old.to_dict() == pytest.approx(probs[old.index].to_dict(), rel=1e-9)
    assert main(["import-labels", str(away / "sheet.csv"), "--run", str(canary_run.run_dir), "--design",
                 str(away / "missing.json")]) == 2


# -- bundled questions ----------------------------------------------------------------------------------
def _turn(turn_id: str) -> dict:
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line)["turn_id"] == turn_id:
            return json.loads(line)
    raise AssertionError(turn_id)


def _graded_answer(turn_id: str, index: int) -> str | None:
    """The answer part the offline judge graded: its rule on the segment's rendered view."""
    from axon_eval.evidence import load_turns, split_segments
    from axon_eval.view import render_view

    turn = next(t for t in load_turns(SAMPLE)[0] if t.turn_id == turn_id)
    return answer_for_segment(render_view(split_segments(turn)[index - 1], 20))


def _section(page: str, heading: str) -> str:
    """The HTML between the ``<h2>`` starting with ``heading`` and the next ``<h2>``."""
    start = page.index(f"<h2>{heading}")
    nxt = page.find("<h2>", start + 4)
    return page[start:nxt if nxt >= 0 else len(page)]


def test_a_part_of_a_bundled_question_shows_the_part_the_message_and_its_answer(rules_run, tmp_path):
    turn = _turn("eu-0012")  # "1. Who won the 2023 final? 2. Which ground ... that year? 3. ... cards?"
    part = "Which ground had the best average crowd that year?"
    assert f"2. {part} 3." in turn["question"]
    answer_part = "Quayside Park, with an average of 28,234."
    assert f"2. {answer_part} 3." in turn["answer"] and _graded_answer("eu-0012", 2) == answer_part
    ids = ["eu-0012#1", "eu-0012#2", "eu-0012#3", "eu-0003#1", "us-0001"]
    sample = labelling.LabellingSample(segments=pd.DataFrame({"segment_id": ids, "stratum": "all", "weight": 1.0,
                                                              "answer_captured": True}),
                                       strata=pd.DataFrame({"population": [5], "allocated": [5], "weight": [1.0]},
                                                           index=pd.Index(["all"], name="stratum")),
                                       stratify=(), seed=0, n_requested=5, min_per_stratum=0, population=5)
    pack = labelling.write_labelling_pack(sample, rules_run, tmp_path / "pack")
    page = (pack / "segments" / labelling.page_name("eu-0012#2")).read_text()
    question = _section(page, "Question")
    assert "part 2 of 3" in question and f"<pre>{part}</pre>" in question
    assert "Who won the 2023 final" not in question
    message = _section(page, "The whole message")
    before, _, after = turn["question"].partition(part)
    assert f"<pre>{before}<mark>{part}</mark>{after}</pre>" in message
    graded = _section(page, "Answer: the part for this question")
    assert f"<pre>{answer_part}</pre>" in graded and "Thornmere" not in graded
    whole = _section(page, "The whole answer")
    head, _, tail = turn["answer"].partition(answer_part)
    assert f"<pre>{head}<mark>{answer_part}</mark>{tail}</pre>" in whole
    assert page.index("Answer: the part for this question") < page.index("The whole answer")
    # part 3 gets its own part, never part 2's
    third = (pack / "segments" / labelling.page_name("eu-0012#3")).read_text()
    assert _graded_answer("eu-0012", 3) in _section(third, "Answer: the part") and answer_part not in _section(
        third, "Answer: the part")
    # explicit segments (not verbatim in the message): the message as relayed, and the parts with this one marked
    explicit = (pack / "segments" / labelling.page_name("eu-0003#1")).read_text()
    relayed = _turn("eu-0003")
    assert f"<pre>{relayed['question']}</pre>" in _section(explicit, "The whole message")
    assert f"<mark>{relayed['segments'][0]}</mark> (this part)" in explicit
    assert f"<pre>{_graded_answer('eu-0003', 1)}</pre>" in _section(explicit, "Answer: the part")
    # a single question: one question, one answer, nothing marked
    single = (pack / "segments" / labelling.page_name("us-0001")).read_text()
    assert "<mark>" not in single and "<h2>Question</h2>" in single and "<h2>Answer</h2>" in single


def test_a_bundled_page_without_the_evidence_file_lists_the_parts(rules_run, monkeypatch):
    from axon_eval.runs import derive

    def gone(*_args, **_kwargs):
        raise derive.InputChangedError("evidence file is gone")

    monkeypatch.setattr(derive, "recorded_evidence", gone)
    entry = labelling.segment_evidence(rules_run, {"eu-0012#2"})["eu-0012#2"]
    assert entry["full_question"] is None and len(entry["parts"]) == 3
    assert entry["answer_part"] == "Quayside Park, with an average of 28,234."
    page = labelling.render_segment_page(entry)
    assert "not at hand" in page and "<mark>Which ground had the best average crowd that year?</mark> (this part)" in page
    assert "<li>Who won the 2023 final?</li>" in page
