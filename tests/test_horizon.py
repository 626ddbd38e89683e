"""Study 04 (row horizon): the pure figures on hand-made tables, evaluation at every horizon through
the verdict cache, the heuristic on evidence-sampled views, and the goal on the committed horizon set."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from axon_eval.evidence import SqlStep, Turn, load_turns, split_segments, trajectory_facts
from axon_eval.judges.base import Judge, JudgeRecord, Verdict
from axon_eval.judges.cache import VerdictCache
from axon_eval.judges.heuristic import HeuristicJudge
from axon_eval.rubric import Rubric
from axon_eval.scoring import score_turn
from axon_eval.stats.horizon import (
    BY_HORIZON_KEYS,
    RESULT_COLUMNS,
    changed_bands,
    compare_samplers,
    evaluate_horizons,
    horizon_summary,
    load_horizon_labels,
    stack_results,
    summarise_study,
)
from axon_eval.view import render_view

ROOT = Path(__file__).resolve().parents[1]
HORIZON_TURNS = ROOT / "data" / "turns" / "horizon_turns.jsonl"
HORIZON_LABELS = ROOT / "data" / "turns" / "horizon_labels.csv"
CAPTURED = datetime(2026, 8, 3, 9, 0, 0, tzinfo=timezone.utc)
FIRST = ["Aldo", "Bram", "Caius", "Dario", "Edvin", "Fenn", "Garan", "Hollis", "Ivo", "Jory"]
LAST = ["Ashgrove", "Brackwater", "Coldharbour", "Dunmore", "Eldersby", "Fallowmere", "Gorsewick", "Hartsell",
        "Ivesley", "Jessamy", "Kettleby", "Larkhollow"]


# =============================================================================================
# Known answers on a hand-made results table
# =============================================================================================
def labels_frame() -> pd.DataFrame:
    """d1, d2, d3 seeded defects (decisive rows 30, 5, 150); c1 a correct answer; u1 is unlabelled."""
    return pd.DataFrame({
        "segment_id": ["d1", "d2", "d3", "c1"], "verdict": ["partial", "partial", "partial", "good"],
        "decisive_row": pd.array([30, 5, 150, 40], dtype="Int64"),
        "row_count": pd.array([100, 100, 200, 100], dtype="Int64"),
        "kind": ["fabricated_value", "unseen_row_figure", "dropped_category", "correct_unseen_row"],
        "decisive_position": ["just_past", "first20", "deep", "deep"]})


def results_frame(evidence_chars: int = 105, evidence_flags_c1: bool = False) -> pd.DataFrame:
    # (segment, band, verdict, score) per (sampler, horizon)
    table = {
        None: [("d1", "partial", "partial", 70), ("d2", "partial", "partial", 60), ("d3", "good", "partial", 85),
               ("c1", "good", "good", 95), ("u1", "good", "good", 90)],
        ("head", 20): [("d1", "good", "good", 90), ("d2", "partial", "partial", 62), ("d3", "good", "good", 88),
                       ("c1", "partial", "partial", 75), ("u1", "good", "good", 90)],
        ("evidence", 20): [("d1", "partial", "partial", 72), ("d2", "partial", "partial", 60),
                           ("d3", "good", "partial", 85),
                           ("c1", "partial" if evidence_flags_c1 else "good", "good", 79 if evidence_flags_c1 else 93),
                           ("u1", "good", "good", 91)],
    }
    rows = []
    for sampler in ("head", "evidence"):
        for h in (20, None):
            chars = 400 if h is None else (100 if sampler == "head" else evidence_chars)
            for seg, band, verdict, score in table[None if h is None else (sampler, h)]:
                rows.append({"sampler": sampler, "horizon": h, "segment_id": seg, "band": band,
                             "judge_verdict": verdict, "score": float(score), "judge_id": "hand",
                             "flagged": band != "good" or verdict != "good", "view_chars": chars,
                             "input_tokens": math.nan, "explanation": f"{seg} at {sampler}/{h}"})
    frame = pd.DataFrame(rows)
    frame["horizon"] = pd.array(frame["horizon"].tolist(), dtype="Int64")
    frame["horizon_label"] = ["all" if pd.isna(h) else str(h) for h in frame["horizon"]]
    return frame


def test_horizon_summary_known_answers():
    s = horizon_summary(results_frame(), labels_frame()).set_index(["sampler", "horizon_label"])
    head = s.loc[("head", "20")]
    assert head["n_segments"] == 5 and head["band_agreement"] == pytest.approx(3 / 5)
    assert head["mean_abs_score_delta"] == pytest.approx((20 + 2 + 3 + 20 + 0) / 5)
    assert head["max_abs_score_delta"] == 20
    # d1 (row 30) and d3 (row 150) lie beyond 20 rows; d2 (row 5) does not
    assert (head["defects_beyond"], head["defects_caught"], head["defects_missed"]) == (2, 0, 2)
    assert (head["defects_flagged"], head["n_defects"], head["correct_n"], head["correct_penalised"]) == (1, 3, 1, 1)
    assert head["mean_chars"] == 100 and head["mean_input_tokens"] == 25 and head["input_tokens_estimated"]
    ev = s.loc[("evidence", "20")]
    assert ev["band_agreement"] == 1.0 and ev["mean_abs_score_delta"] == pytest.approx(1.0)
    # d3 keeps the good band but its verdict is partial: flagged, so caught
    assert (ev["defects_caught"], ev["defects_missed"], ev["correct_penalised"]) == (2, 0, 0)
    everything = s.loc[("head", "all")]
    assert (everything["band_agreement"], everything["defects_beyond"], everything["defects_flagged"]) == (1.0, 0, 3)
    assert list(s.index.get_level_values("horizon_label")) == ["20", "all", "20", "all"]


def test_a_result_shown_whole_has_nothing_beyond_the_horizon():
    labels = labels_frame()
    labels.loc[labels["segment_id"] == "d1", "row_count"] = 18  # 30 > 20, but every row is shown
    s = horizon_summary(results_frame(), labels).set_index(["sampler", "horizon_label"])
    assert s.loc[("head", "20"), "defects_beyond"] == 1


def test_compare_samplers_known_answers_and_goal():
    c = compare_samplers(results_frame(), labels_frame(), budget=20)
    assert c.baseline_missed == ["d1", "d3"] and c.candidate_caught == ["d1", "d3"] and c.catch_share == 1.0
    assert c.catchable_missed == ["d1", "d3"] and c.catchable_share == 1.0
    assert (c.baseline_penalised, c.candidate_penalised) == (1, 0)
    assert c.char_ratio == pytest.approx(1.05) and c.token_ratio is None
    assert c.goal_met and c.reasons == []


def test_compare_samplers_says_why_the_goal_is_missed():
    c = compare_samplers(results_frame(evidence_chars=115, evidence_flags_c1=True), labels_frame())
    head_only = results_frame()
    head_only.loc[(head_only["sampler"] == "head") & (head_only["segment_id"] == "c1"), "flagged"] = False
    assert not c.goal_met and any("1.150x the characters" in r for r in c.reasons)
    c2 = compare_samplers(pd.concat([head_only[head_only["sampler"] == "head"],
                                     results_frame(evidence_flags_c1=True).query("sampler == 'evidence'")]),
                          labels_frame())
    assert any("flags 1 correct answers, head 0" in r for r in c2.reasons)


def unjudge(frame: pd.DataFrame, sampler: str, horizon: int, segment: str) -> None:
    """Make one (sampler, horizon, segment) row of a hand-made table unjudged, as evaluate_horizons does."""
    at = (frame["sampler"] == sampler) & (frame["horizon"] == horizon) & (frame["segment_id"] == segment)
    frame.loc[at, ["band", "judge_verdict"]] = None
    frame.loc[at, "score"] = math.nan
    frame.loc[at, "flagged"] = pd.NA
    frame.loc[at, "status"] = "unjudged"


def unjudged_table() -> pd.DataFrame:
    frame = results_frame()
    frame["flagged"] = frame["flagged"].astype("boolean")
    frame["status"] = "judged"
    unjudge(frame, "head", 20, "d1")  # a defect beyond the horizon (row 30 of 100)
    unjudge(frame, "head", 20, "c1")  # the correct answer
    return frame


def test_an_unjudged_defect_is_not_missed_and_an_unjudged_correct_answer_is_not_spared():
    s = horizon_summary(unjudged_table(), labels_frame()).set_index(["sampler", "horizon_label"])
    head = s.loc[("head", "20")]
    # beyond 20 rows: d1 (unjudged) and d3 (judged good/good, not flagged). Before: missed 2, unjudged not counted.
    assert (head["defects_beyond"], head["defects_caught"], head["defects_missed"], head["defects_unjudged"]) \
        == (2, 0, 1, 1)
    assert head["defects_beyond"] == head["defects_caught"] + head["defects_missed"] + head["defects_unjudged"]
    # c1 was flagged when judged; unjudged it is neither penalised nor spared: its own count
    assert (head["correct_n"], head["correct_penalised"], head["correct_unjudged"]) == (1, 0, 1)
    assert (s.loc[("evidence", "20"), "defects_unjudged"], s.loc[("evidence", "20"), "correct_unjudged"]) == (0, 0)


def test_compare_samplers_counts_unjudged_items_apart_and_says_so():
    c = compare_samplers(unjudged_table(), labels_frame(), budget=20)
    assert c.baseline_missed == ["d3"] and c.baseline_unjudged == ["d1"]
    assert c.candidate_caught == ["d3"] and c.catch_share == 1.0 and c.candidate_unjudged == []
    assert (c.baseline_correct_unjudged, c.candidate_correct_unjudged) == (1, 0)
    assert any("d1" in n and "not judged by head" in n for n in c.notes)
    assert any("1 correct answer(s) were not judged by head" in n for n in c.notes)
    frame = results_frame()
    frame["flagged"] = frame["flagged"].astype("boolean")
    unjudge(frame, "evidence", 20, "d3")  # head misses d3; evidence could not judge it
    c2 = compare_samplers(frame, labels_frame(), budget=20)
    assert c2.baseline_missed == ["d1", "d3"] and c2.candidate_caught == ["d1"] and c2.candidate_unjudged == ["d3"]
    assert any("not judged by evidence (d3)" in n for n in c2.notes)
    study = summarise_study(unjudged_table(), labels_frame(), row_budget=20).to_dict()
    head20 = next(e for e in study["by_horizon"] if e["sampler"] == "head" and e["horizon"] == 20)
    assert (head20["defects_unjudged"], head20["correct_unjudged"]) == (1, 1)
    assert study["goal"]["baseline_unjudged"] == ["d1"]


def test_the_horizon_figure_names_the_unjudged_items():
    from axon_eval import reporting as plots

    summary = horizon_summary(unjudged_table(), labels_frame())
    note = plots.horizon_unjudged_note(summary)
    assert note == ("NOT JUDGED (summed over the horizons): 1 seeded defect(s) beyond the horizon and 1 correct "
                    "answer(s); left out of caught, missed and penalised")
    assert note in plots.horizon_curves(summary).get_suptitle()
    assert plots.horizon_unjudged_note(horizon_summary(results_frame(), labels_frame())) == ""


def test_inputs_are_checked_and_errors_name_the_problem():
    res, labels = results_frame(), labels_frame()
    with pytest.raises(ValueError, match="all-rows reference"):
        horizon_summary(res[res["horizon"].notna()], labels)
    mixed = res.copy()
    mixed.loc[0, "judge_id"] = "other"
    with pytest.raises(ValueError, match="mix judge ids"):
        horizon_summary(mixed, labels)
    with pytest.raises(ValueError, match="repeat"):
        horizon_summary(pd.concat([res, res.head(1)]), labels)
    with pytest.raises(ValueError, match="decisive_row"):
        horizon_summary(res, labels.drop(columns=["decisive_row"]))
    with pytest.raises(ValueError, match="no rows for sampler 'head' at horizon 50"):
        compare_samplers(res, labels, budget=50)


def test_changed_bands_lists_the_segments_in_full():
    changed = changed_bands(results_frame(), labels_frame())
    assert sorted(zip(changed["sampler"], changed["segment_id"])) == [("head", "c1"), ("head", "d1")]
    row = changed[changed["segment_id"] == "d1"].iloc[0]
    assert (row["band_all"], row["band"], row["score_all"], row["score"]) == ("partial", "good", 70, 90)
    assert row["kind"] == "fabricated_value" and row["explanation"] == "d1 at head/20"


def test_stack_results_builds_the_long_table_from_per_horizon_tables():
    res = results_frame()
    per = {}
    for (sampler, h), part in res.groupby(["sampler", "horizon_label"]):
        frame = part.drop(columns=["sampler", "horizon", "horizon_label", "flagged"]).assign(sample_index=0)
        per[(sampler, None if h == "all" else int(h))] = pd.concat([frame, frame.assign(sample_index=1)])
    stacked = stack_results(per)
    assert len(stacked) == len(res)  # sample 1 dropped
    assert stacked["horizon"].isna().sum() == 10 and set(stacked["horizon_label"]) == {"20", "all"}
    merged = stacked.merge(res, on=["sampler", "segment_id", "horizon_label"], suffixes=("", "_hand"))
    assert (merged["flagged"] == merged["flagged_hand"]).all()
    only_head = stack_results({20: per[("head", 20)], None: per[("head", None)]})
    assert set(only_head["sampler"]) == {"head"}
    with pytest.raises(ValueError, match="horizon must be an integer"):
        stack_results({-3: per[("head", 20)]})


def test_study_json_has_the_stable_keys():
    study = summarise_study(results_frame(), labels_frame(), source="hand-made")
    data = json.loads(study.to_json())
    assert list(data)[:5] == ["study", "judge_id", "n_segments", "by_horizon", "goal_met"]
    assert data["study"] == "04_row_horizon" and data["judge_id"] == "hand" and data["n_segments"] == 5
    assert data["goal_met"] is True and data["simulated"] is False and data["source"] == "hand-made"
    assert len(data["by_horizon"]) == 4
    for entry in data["by_horizon"]:
        assert list(entry)[:len(BY_HORIZON_KEYS)] == list(BY_HORIZON_KEYS)
    assert [e["horizon"] for e in data["by_horizon"]] == [20, None, 20, None]
    head20 = data["by_horizon"][0]
    assert (head20["defects_caught"], head20["defects_missed"], head20["correct_penalised"]) == (0, 2, 1)
    # no NaN leaks into the JSON
    assert "NaN" not in study.to_json()
    assert summarise_study(results_frame().assign(simulated=True), labels_frame()).simulated is True
    one_sampler = summarise_study(results_frame().query("sampler == 'head'"), labels_frame())
    assert one_sampler.goal_met is False and "needs both" in one_sampler.goal["reasons"][0]


# =============================================================================================
# evaluate_horizons: one call, each distinct view judged once, through the cache
# =============================================================================================
def make_turn(turn_id: str, rows: list[list], columns: list[str], question: str, answer: str,
              sql: str = "SELECT player, team, tries FROM scorers ORDER BY tries DESC") -> Turn:
    return Turn(schema_version=1, turn_id=turn_id, captured_at=CAPTURED, region="eu", surface="web",
                client="client-a", question=question, answer=answer,
                steps=[SqlStep(sql=sql, status="ok", columns=columns, rows=rows, row_count=len(rows))])


def names(n: int) -> list[str]:
    return [f"{FIRST[i % len(FIRST)]} {LAST[i // len(FIRST)]}" for i in range(n)]


def scorers(n: int) -> list[list]:
    """``n`` players, tries from 12 down to 3 (no value above 12)."""
    return [[name, "Saltmere" if i % 2 else "Lowhaven", 12 - min(i // 12, 9)] for i, name in enumerate(names(n))]


class CountingJudge(Judge):
    """Grades every view 10/10/10/10 ``good`` and counts the views it was really asked to judge."""

    judge_id = "counting"
    model = "counting-v1"
    prompt_version = "counting-v1"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        self.calls.append(view.sha256)
        verdict = Verdict(intent_understood=10, sql_quality=10, result_relevance=10, answer_faithfulness=10,
                          verdict="good", explanation=f"{len(view.text)} characters")
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index, verdict=verdict,
                           input_tokens=len(view.text) // 3, output_tokens=12)


def test_evaluate_horizons_judges_each_distinct_view_once_and_reuses_the_cache(tmp_path: Path):
    small = make_turn("small", scorers(8), ["player", "team", "tries"], "How many tries did Bram Ashgrove score?",
                      "Bram Ashgrove scored 12 tries.")
    large = make_turn("large", scorers(60), ["player", "team", "tries"], "How many tries did Aldo Dunmore score?",
                      "Aldo Dunmore scored 10 tries.")
    judge = CountingJudge()
    with VerdictCache(tmp_path / "cache.sqlite") as cache:
        res = evaluate_horizons([small, large], judge, horizons=(0, 5, 20, None), cache=cache)
        # small: counts-only, head@5, evidence@5, all rows (= @20); large: counts-only, head/evidence @5 and @20, all
        assert len(judge.calls) == len(set(judge.calls)) == 4 + 6
        again = evaluate_horizons([small, large], judge, horizons=(0, 5, 20, None), cache=cache)
    assert len(judge.calls) == 10 and again["cached"].all()
    assert list(res.columns) == list(RESULT_COLUMNS) and len(res) == 2 * 2 * 4
    assert str(res["horizon"].dtype) == "Int64" and res["horizon"].isna().sum() == 4
    assert set(res.loc[res["horizon"].isna(), "horizon_label"]) == {"all"}
    row = res[(res["segment_id"] == "large") & (res["sampler"] == "evidence") & (res["horizon"] == 5)].iloc[0]
    view = render_view(split_segments(large)[0], 5, "evidence")
    assert row["view_sha256"] == view.sha256 and row["view_chars"] == len(view.text)
    assert (row["shown_rows"], row["total_rows"]) == (5, 60)
    assert row["input_tokens"] == len(view.text) // 3  # exact from the record
    expected = score_turn({d: 10 for d in ("intent_understood", "sql_quality", "result_relevance",
                                           "answer_faithfulness")}, trajectory_facts(large), Rubric.default())
    assert row["score"] == expected.score and row["band"] == "good" and not row["flagged"]
    assert not res["simulated"].any()
    summary = horizon_summary(res, pd.DataFrame({"segment_id": ["large"], "verdict": ["good"],
                                                 "decisive_row": [25], "row_count": [60]}))
    assert not summary["input_tokens_estimated"].any()


def test_evaluate_horizons_rejects_bad_horizons_and_samplers():
    turn = make_turn("t", scorers(8), ["player", "team", "tries"], "How many tries did Bram Ashgrove score?",
                     "Bram Ashgrove scored 12 tries.")
    with pytest.raises(ValueError, match="-1"):
        evaluate_horizons([turn], CountingJudge(), horizons=(-1, None))
    with pytest.raises(ValueError, match="repeat"):
        evaluate_horizons([turn], CountingJudge(), horizons=(5, 5, None))
    with pytest.raises(ValueError, match="'tail'"):
        evaluate_horizons([turn], CountingJudge(), samplers=("head", "tail"))


# =============================================================================================
# The heuristic on evidence-sampled views: an unseen claim is unverifiable, never support
# =============================================================================================
def heuristic_flags(turn: Turn, horizon: int | None, sampler: str) -> tuple[bool, dict]:
    record = HeuristicJudge().judge(render_view(split_segments(turn)[0], horizon, sampler))
    assert record.verdict is not None, record.error
    details = record.extra["heuristic"]
    return (record.verdict.verdict != "good" or details["band"] != "good"), details


def test_a_figure_no_row_holds_is_unverifiable_to_head_and_unsupported_to_evidence():
    rows = scorers(120)
    player = rows[87][0]
    turn = make_turn("fab", rows, ["player", "team", "tries"], f"How many tries did {player} score?",
                     f"{player} scored 40 tries.")
    flagged, details = heuristic_flags(turn, 20, "head")
    # unseen, so unverifiable (never support); an unverifiable claim costs something
    assert flagged and details["unverifiable_claims"] == ["40"] and not details["unsupported_claims"]
    flagged, details = heuristic_flags(turn, 20, "evidence")
    assert flagged and details["unsupported_claims"] == ["40"]
    assert heuristic_flags(turn, None, "head")[0]  # and every row agrees


def test_a_figure_from_another_row_is_caught_when_every_row_of_the_entity_is_shown():
    rows = scorers(120)
    player, other = rows[87][0], rows[3]  # row 4 holds 12 tries; row 88 holds 5
    turn = make_turn("borrowed", rows, ["player", "team", "tries"], f"How many tries did {player} score?",
                     f"{player} scored {other[2]} tries.")
    assert not heuristic_flags(turn, 20, "head")[0]
    assert heuristic_flags(turn, 20, "evidence")[0]
    assert heuristic_flags(turn, None, "head")[0]


def test_a_true_absolute_claim_is_penalised_by_head_but_not_by_evidence():
    people = names(40)
    rows = [[f"2024-03-{1 + i % 28:02d}", people[i % 40], 10 + i % 60, "yellow_card"] for i in range(60)]
    rows[55][3] = "red_card"
    player = people[12]  # rows 13 and 53: both yellow
    assert [r[3] for r in rows if r[1] == player] == ["yellow_card", "yellow_card"]
    turn = make_turn("never", rows, ["match_date", "player", "minute", "event_type"],
                     f"Has {player} ever been sent off?",
                     f"No - {player} has never been sent off; the record shows only 2 yellow cards for him.",
                     sql="SELECT m.match_date, p.name AS player, e.minute, e.event_type FROM cards")
    assert heuristic_flags(turn, 20, "head")[0]
    assert not heuristic_flags(turn, 20, "evidence")[0]
    assert not heuristic_flags(turn, None, "head")[0]


def test_a_question_entity_no_row_holds_is_absent_only_for_a_searched_result():
    turn = make_turn("absent", scorers(120), ["player", "team", "tries"],
                     "Who scored tries, and how many did Zeno Quarrington score?",
                     "120 players scored tries. Zeno Quarrington is not among the try scorers.")
    assert not heuristic_flags(turn, 20, "head")[0]
    assert heuristic_flags(turn, 20, "evidence")[0]
    assert heuristic_flags(turn, None, "head")[0]


def test_horizon_zero_is_judged_without_error_on_the_heuristic():
    turn = make_turn("zero", scorers(30), ["player", "team", "tries"], "How many tries did Aldo Ashgrove score?",
                     "Aldo Ashgrove scored 12 tries.")
    flagged, details = heuristic_flags(turn, 0, "head")
    assert details["unverifiable_claims"] == ["12"] and not details["unsupported_claims"]
    assert flagged  # unverifiable costs something: counts alone cannot support a figure


# =============================================================================================
# The committed horizon set
# =============================================================================================
def test_load_horizon_labels_reads_the_study_columns(tmp_path: Path):
    labels = load_horizon_labels(HORIZON_LABELS)
    assert len(labels) >= 60 and str(labels["decisive_row"].dtype) == "Int64"
    assert set(labels["kind"]) == {"fabricated_value", "unseen_row_figure", "dropped_category", "correct_unseen_row"}
    assert labels["source_row"].notna().sum() == (labels["kind"] == "unseen_row_figure").sum()
    assert "constructed" in labels.attrs["note"].lower()
    broken = tmp_path / "labels.csv"
    pd.read_csv(HORIZON_LABELS, dtype=str, keep_default_na=False).drop(columns=["kind"]).to_csv(broken, index=False)
    with pytest.raises(ValueError, match="kind"):
        load_horizon_labels(broken)


def test_on_the_horizon_set_evidence_at_20_meets_the_goal_against_head():
    """The issue's goal, measured with the heuristic on the results of at most 1,000 rows (the larger ones
    take the bulk of the time; all 64 turns: ``python -c "from axon_eval.stats.horizon import main; main()"``)."""
    turns, invalid = load_turns(HORIZON_TURNS)
    assert not invalid
    labels = load_horizon_labels(HORIZON_LABELS)
    turns = [t for t in turns if t.sql_steps[0].total_rows <= 1000]
    res = evaluate_horizons(turns, HeuristicJudge(), horizons=(20, None))
    comparison = compare_samplers(res, labels, budget=20)
    assert len(comparison.baseline_missed) >= 5  # enough beyond-horizon misses for the goal to mean something
    assert comparison.goal_met, comparison.reasons
    summary = horizon_summary(res, labels).set_index(["sampler", "horizon_label"])
    # with every row the heuristic flags nearly every defect: a filter code it cannot map to
    # the question's words (pool = 'A') is unverifiable rather than wrong scope, which lets one dropped-
    # category turn through. Two correct answers are penalised by known false positives of the issue-12
    # heuristic (a measure named by a row value, "tries" in event_type; "points" read as league_points):
    # a weakness of the judge, listed in the README, not of the data
    everything = summary.loc[("head", "all")]
    assert everything["defects_flagged"] >= 0.95 * everything["n_defects"]
    assert everything["correct_penalised"] <= 2
