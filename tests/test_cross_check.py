"""The cross-check: judged segments whose judge verdict is worse than their band are counted and listed,
loudly, by the CLI summary of ``evaluate`` and on the report's first page, each with the packaged candidate
rubric that moves it to a worse band.

The oracles are written out here: a constructed results frame whose conflicts, and whose scores under
``axon-v1-faithcap`` (faithfulness <= 3 caps at 49) and ``axon-v1-faithpartial`` (the same at 79), are
worked by hand; and, for the bundled sample, the conflicts counted with plain pandas from the results.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import summaries
from axon_eval.cli import main
from axon_eval.rubric import CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.runs import load_run
from axon_eval.scoring import score_turn

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
RANK = {"good": 0, "partial": 1, "poor": 2}


def row(segment_id: str, subscores: tuple[float, ...], score: float, band: str, verdict: str | None,
        sample_index: int = 0, status: str = "judged") -> dict:
    """One results row; score and band as axon-v1 gives them (worked by hand: weights .30/.25/.25/.20)."""
    return {"segment_id": segment_id, "turn_id": segment_id.split("#")[0], "sample_index": sample_index,
            "status": status, "score": score if status == "judged" else float("nan"),
            "band": band if status == "judged" else None, "judge_verdict": verdict,
            **dict(zip(DIMENSIONS, subscores, strict=True)), **{f: False for f in CAP_FACTS},
            "caps_applied": "", "judge_id": "scripted/v1", "rubric_id": Rubric.default().id}


@pytest.fixture
def constructed() -> pd.DataFrame:
    return pd.DataFrame([
        row("a-1", (10, 10, 10, 3), 86.0, "good", "partial"),   # 3+2.5+2.5+0.6 = 8.6 -> 86, good
        row("b-1", (8, 8, 8, 8), 80.0, "good", "poor"),          # 80, good; faithfulness 8: no cap bites
        row("c-1", (8, 8, 8, 2), 68.0, "partial", "poor"),       # 2.4+2+2+0.4 = 6.8 -> 68, partial
        row("d-1", (10, 10, 10, 10), 100.0, "good", "good"),     # agrees
        row("e-1", (2, 2, 2, 2), 20.0, "poor", "good"),          # the verdict is better, not worse
        row("f-1", (float("nan"),) * 4, 0.0, "", None, status="unjudged"),
        # two samples: 86 and 100, mean 93 (good), both verdicts partial. Per sample under faithcap: 49 and
        # 100, mean 74.5 (partial: moved); under faithpartial 79 and 100, mean 89.5 (good: not moved).
        row("g-1", (10, 10, 10, 3), 86.0, "good", "partial", sample_index=0),
        row("g-1", (10, 10, 10, 10), 100.0, "good", "partial", sample_index=1),
    ])


def test_verdict_conflicts_of_a_constructed_frame(constructed):
    table = summaries.verdict_conflicts(constructed)
    assert table["segment_id"].tolist() == ["a-1", "b-1", "c-1", "g-1"]
    assert table["conflict"].tolist() == ["good band, verdict partial", "good band, verdict poor",
                                          "partial band, verdict poor", "good band, verdict partial"]
    by_id = table.set_index("segment_id")
    assert by_id.loc["g-1", "score"] == pytest.approx(93.0) and by_id.loc["g-1", "band"] == "good"
    expected = {  # (faithcap score, band), (faithpartial score, band), moved by
        "a-1": ((49.0, "poor"), (79.0, "partial"), "axon-v1-faithcap;axon-v1-faithpartial"),
        "b-1": ((80.0, "good"), (80.0, "good"), ""),
        "c-1": ((49.0, "poor"), (68.0, "partial"), "axon-v1-faithcap"),
        "g-1": ((74.5, "partial"), (89.5, "good"), "axon-v1-faithcap"),
    }
    for sid, (cap, partial, moved) in expected.items():
        assert (by_id.loc[sid, "score axon-v1-faithcap"], by_id.loc[sid, "band axon-v1-faithcap"]) == cap, sid
        assert (by_id.loc[sid, "score axon-v1-faithpartial"], by_id.loc[sid, "band axon-v1-faithpartial"]) == partial
        assert by_id.loc[sid, "moved_by"] == moved, sid


def test_cross_check_counts_and_names_the_candidates(constructed):
    check = summaries.summarise(constructed)["cross_check"]
    assert check["count"] == 4 and check["of"] == 6  # judged segments with a verdict: a b c d e g
    assert check["by_kind"] == {"good band, verdict partial": 2, "good band, verdict poor": 1,
                                "partial band, verdict poor": 1}
    assert [(c["name"], c["moves"]) for c in check["candidates"]] == [("axon-v1-faithcap", 3),
                                                                       ("axon-v1-faithpartial", 1)]
    assert check["candidates"][0]["change"] == "answer_faithfulness <= 3 caps the score at 49"
    assert check["not_moved"] == 1 and check["rubric"] == "axon-v1"
    text = summaries.format_summary(summaries.summarise(constructed))
    assert "CROSS-CHECK: the judge's verdict is WORSE than the band on 4 of 6 judged segments" in text
    assert "  c-1: score 68.0, band partial, judge verdict poor -> axon-v1-faithcap: poor (49.0)" in text
    assert "  b-1: score 80.0, band good, judge verdict poor -> no packaged candidate rubric moves it" in text


def test_no_conflict_is_one_quiet_line(constructed):
    agreeing = constructed[constructed["segment_id"].isin(["d-1", "e-1"])]
    check = summaries.cross_check(agreeing)
    assert check["count"] == 0 and check["items"] == []
    assert summaries.cross_check_lines(check) == [
        "cross-check: the judge's verdict is nowhere worse than the band (2 judged segments with a verdict)"]


def test_evaluate_prints_the_cross_check_and_the_report_lists_it(tmp_path, capsys):
    # the rule judge: its verdicts disagree with the band on many segments, which the listing needs
    assert main(["evaluate", "--turns", str(SAMPLE), "--judge", "heuristic-rules", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    results = load_run(run_dir).results
    # the oracle: plain pandas over the (one-sample) results rows
    judged = results[results["status"] == "judged"]
    worse = judged[judged["judge_verdict"].map(RANK) > judged["band"].map(RANK)]
    assert len(worse) > 5
    assert (f"CROSS-CHECK: the judge's verdict is WORSE than the band on {len(worse)} of "
            f"{judged['judge_verdict'].notna().sum()} judged segments") in out
    listed = re.findall(r"^  (\S+): score [0-9.]+, band (\w+), judge verdict (\w+) -> (.*)$", out, re.M)
    assert [sid for sid, *_ in listed] == worse["segment_id"].tolist()[:5]
    for sid, band, verdict, moved in listed:  # each candidate named exactly when score_turn moves it down
        r = worse.set_index("segment_id").loc[sid]
        assert (band, verdict) == (r["band"], r["judge_verdict"])
        for name in ("axon-v1-faithcap", "axon-v1-faithpartial"):
            again = score_turn({d: r[d] for d in DIMENSIONS}, {f: bool(r[f]) for f in CAP_FACTS}, Rubric.packaged(name))
            named = f"{name}: {again.band} ({again.score:.1f})" in moved
            assert named == (RANK[again.band] > RANK[band]), (sid, name, moved)
    assert f"and {len(worse) - 5} more: listed in {run_dir / 'report.html'} (first page)" in out
    assert "candidate rubric axon-v1-faithcap (answer_faithfulness <= 3 caps the score at 49) moves" in out
    page = (run_dir / "report.html").read_text()
    first = page[: page.index("<h2>Summary</h2>")]
    assert f"worse than the band on {len(worse)} of" in first
    for sid in worse["segment_id"]:
        assert f"<td>{sid}</td>" in first, sid
