"""repeat / ensemble / replay / noise wrappers, exercised with small real Judge subclasses."""

from __future__ import annotations

import asyncio
import json
import statistics
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from axon_eval.evidence import SqlStep, Turn
from axon_eval.judges import Judge, JudgeRecord, SpecError, Verdict, VerdictCache, build_judge
from axon_eval.judges.wrappers import (
    EnsembleJudge,
    NoiseJudge,
    RepeatJudge,
    ReplayJudge,
    SimulatedJudge,
    is_simulated,
    simulations,
)
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.scoring import score_turn
from axon_eval.stats.noise import MEMBER_COLUMNS, members_frame
from axon_eval.view import EvidenceView, build_views

CAPTURED = datetime(2026, 7, 20, 9, 0, tzinfo=timezone.utc)


def make_views(n: int, answer: str | None = "42 orders.") -> list[EvidenceView]:
    turns = [Turn(schema_version=1, turn_id=f"t{i}", captured_at=CAPTURED, region="eu", surface="web", client="c",
                  question=f"How many orders in store {i}?", answer=answer,
                  steps=[SqlStep(sql=f"SELECT {i}", status="ok", columns=["n"], rows=[[42]], row_count=1)])
             for i in range(n)]
    return build_views(turns, 20)


class FixedJudge(Judge):
    """Returns the same subscores for every view (or fails), counting calls per (segment, sample)."""

    def __init__(self, name: str, scores: tuple, label: str = "good", *, fail: bool = False,
                 sample_offset: bool = False) -> None:
        self.judge_id = name
        self.model = f"model-{name}"
        self.prompt_version = "judge_v1"
        self.scores = scores
        self.label = label
        self.fail = fail
        self.sample_offset = sample_offset
        self.calls: list[tuple[str, int]] = []

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        self.calls.append((view.segment_id, sample_index))
        if self.fail:
            return self.error_record(view, sample_index, f"{self.judge_id} is down")
        bump = sample_index if self.sample_offset else 0
        scores = dict(zip(DIMENSIONS, self.scores, strict=True))
        scores = {d: (None if v is None else min(10, v + bump)) for d, v in scores.items()}
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index,
                           verdict=Verdict(**scores, verdict=self.label, explanation=f"{self.judge_id} says so"),
                           input_tokens=100, output_tokens=10, cost_usd=0.001, latency_ms=5.0 + bump,
                           cache_key=self.cache_key(view, sample_index))


class RaisingJudge(FixedJudge):
    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        raise RuntimeError("bug in a judge")


# -- repeat -------------------------------------------------------------------------------------------
def test_repeat_returns_n_records_per_view_view_major(tmp_path):
    inner = FixedJudge("a", (5, 5, 5, 5), sample_offset=True)
    judge = RepeatJudge(inner, 3)
    views = make_views(2)
    records = judge.judge_many(views, progress=False)
    assert [(r.segment_id, r.sample_index) for r in records] == [
        ("t0", 0), ("t0", 1), ("t0", 2), ("t1", 0), ("t1", 1), ("t1", 2)]
    assert [r.verdict.sql_quality for r in records] == [5, 6, 7, 5, 6, 7]
    assert {r.judge_id for r in records} == {"a"} and judge.judge_id == "repeat(n=3)[a]"
    samples = judge.judge_samples(views[0])
    assert [r.sample_index for r in samples] == [0, 1, 2]
    assert judge.judge(views[0], 2).sample_index == 2
    # each sample index is its own cache entry; a second run makes no calls
    cache = VerdictCache(tmp_path / "c.sqlite")
    judge.judge_many(views, cache=cache, progress=False)
    before = len(inner.calls)
    again = judge.judge_many(views, cache=cache, progress=False)
    assert len(inner.calls) == before and all(r.cached for r in again) and len(cache) == 6
    assert len({r.cache_key for r in again}) == 6


def test_repeat_rejects_bad_n():
    with pytest.raises(ValueError, match="n >= 1"):
        RepeatJudge(FixedJudge("a", (1, 1, 1, 1)), 0)


# -- ensemble -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("reducer", "expected"), [
    ("mean", {"intent_understood": 7, "sql_quality": 6, "result_relevance": 20 / 3, "answer_faithfulness": 5}),
    ("median", {"intent_understood": 8, "sql_quality": 6, "result_relevance": 6, "answer_faithfulness": 5}),
    ("majority", {"intent_understood": 8, "sql_quality": 2, "result_relevance": 6, "answer_faithfulness": 4}),
])
def test_ensemble_reducers(reducer, expected):
    members = [FixedJudge("a", (8, 6, 6, 4), "good"), FixedJudge("b", (8, 10, 6, 6), "partial"),
               FixedJudge("c", (5, 2, 8, None), "partial")]
    rec = EnsembleJudge(members, reducer).judge(make_views(1)[0])
    assert rec.judged and rec.judge_id == f"ensemble(reducer={reducer})[a, b, c]"
    for dim, value in expected.items():
        assert getattr(rec.verdict, dim) == pytest.approx(value), dim
    assert rec.verdict.verdict == "partial"  # majority of member verdicts
    spread = rec.extra["spread"]
    assert spread["sql_quality"] == {"sd": pytest.approx(statistics.pstdev([6, 10, 2])), "range": 8}
    assert spread["answer_faithfulness"]["range"] == 2  # the null member is left out
    assert rec.extra["disagreement"] is True and rec.extra["n_judged"] == 3
    assert rec.input_tokens == 300 and rec.cost_usd == pytest.approx(0.003)


def test_ensemble_mean_keeps_float_and_agreement_flag():
    members = [FixedJudge("a", (6, 6, 6, 6)), FixedJudge("b", (7, 7, 7, 7))]
    rec = EnsembleJudge(members, "mean").judge(make_views(1)[0])
    assert rec.verdict.intent_understood == 6.5 and isinstance(rec.verdict.intent_understood, float)
    # scores 60 and 70: both partial, every range 1 < 2 -> no disagreement
    assert [m["score"] for m in rec.extra["members"]] == [60.0, 70.0]
    assert rec.extra["disagreement"] is False and rec.extra["disagreement_reasons"] == []
    assert JudgeRecord.from_json_line(rec.to_json_line()) == rec


def test_ensemble_disagreement_is_defined_on_scored_bands():
    # same verdict label from both members, but scores 70 (partial) and 80 (good): the numbers disagree
    rec = EnsembleJudge([FixedJudge("a", (7, 7, 7, 7), "good"), FixedJudge("b", (8, 8, 8, 8), "good")]).judge(
        make_views(1)[0])
    assert [m["band"] for m in rec.extra["members"]] == ["partial", "good"]
    assert rec.extra["disagreement"] is True and rec.extra["verdicts_differ"] is False
    assert rec.extra["disagreement_reasons"] == ["scored bands differ: good, partial"]
    assert rec.extra["rubric_id"] and rec.extra["disagree_at"] == 2.0


def test_ensemble_disagreement_on_a_dimension_range_with_configurable_threshold():
    members = [FixedJudge("a", (6, 6, 6, 6)), FixedJudge("b", (6, 8, 6, 6))]  # scores 60 and 65: both partial
    view = make_views(1)[0]
    rec = EnsembleJudge(members).judge(view)
    assert rec.extra["disagreement"] is True
    assert rec.extra["disagreement_reasons"] == ["sql_quality range 2 >= 2"]
    relaxed = EnsembleJudge(members, disagree_at=3).judge(view)
    assert relaxed.extra["disagreement"] is False and relaxed.extra["disagree_at"] == 3.0
    with pytest.raises(ValueError, match="disagree_at must be a positive number of points, got 0"):
        EnsembleJudge(members, disagree_at=0)


def test_ensemble_member_scores_apply_the_views_caps():
    turn = Turn(schema_version=1, turn_id="f0", captured_at=CAPTURED, region="eu", surface="web", client="c",
                question="How many orders?", answer="None.",
                steps=[SqlStep(sql="SELECT 1", status="error", error="relation does not exist")])
    view = build_views([turn], 20)[0]
    assert view.facts.all_sql_failed
    # raw 80 (good) and 70 (partial), but every SQL failed: both capped at 25 -> both poor, no band split
    rec = EnsembleJudge([FixedJudge("a", (8, 8, 8, 8)), FixedJudge("b", (7, 7, 7, 7))]).judge(view)
    assert [(m["raw_score"], m["score"], m["band"]) for m in rec.extra["members"]] == [
        (80.0, 25.0, "poor"), (70.0, 25.0, "poor")]
    assert rec.extra["facts"] == {"all_sql_failed": True, "ended_on_failure": True, "no_tools": False}
    assert rec.extra["disagreement"] is False


def test_median_of_two_members_is_refused():
    two = [FixedJudge("a", (1, 1, 1, 1)), FixedJudge("b", (3, 3, 3, 3))]
    with pytest.raises(ValueError, match="median of two values is their mean"):
        EnsembleJudge(two, "median")
    with pytest.raises(SpecError, match="reducer=median with 2 members"):
        build_judge("ensemble(heuristic, heuristic, reducer=median)")
    assert build_judge("ensemble(heuristic, heuristic, heuristic, reducer=median)").reducer == "median"
    with pytest.raises(SpecError, match="disagree_at must be > 0"):
        build_judge("ensemble(heuristic, heuristic, disagree_at=0)")
    assert build_judge("ensemble(heuristic, heuristic, disagree_at=3)").disagree_at == 3.0
    # at run time a failed member can leave two judged: the median is then their mean, and it says so
    three = [*two, FixedJudge("c", (0, 0, 0, 0), fail=True)]
    rec = EnsembleJudge(three, "median").judge(make_views(1)[0])
    assert rec.verdict.sql_quality == 2 and "median is their mean" in rec.extra["reducer_note"]


def test_members_frame_flattens_ensemble_records_to_one_row_per_member():
    members = [FixedJudge("a", (8, 6, 6, 4)), FixedJudge("b", (8, 10, 6, 6)), FixedJudge("c", (0, 0, 0, 0), fail=True)]
    views = make_views(2)
    records = RepeatJudge(EnsembleJudge(members), 2).judge_many(views, progress=False)
    frame = members_frame(records)
    assert len(frame) == 2 * 2 * 3
    assert list(frame.columns) == list(MEMBER_COLUMNS)
    first = frame[(frame.segment_id == "t1") & (frame.sample_index == 1)].set_index("member")
    assert first.loc[1, "judge_id"] == "b" and first.loc[1, "sql_quality"] == 10
    assert first.loc[0, "score"] == pytest.approx(score_turn(
        {"intent_understood": 8, "sql_quality": 6, "result_relevance": 6, "answer_faithfulness": 4},
        views[1].facts).score)
    assert np.isnan(first.loc[2, "score"]) and first.loc[2, "error"] == "c is down"
    assert first.loc[0, "cost_usd"] == 0.001 and first.loc[0, "input_tokens"] == 100
    # dict records (verdicts.jsonl lines) flatten the same way; re-scoring under the same rubric agrees
    from_json = members_frame(json.loads(r.to_json_line()) for r in records)
    pd.testing.assert_frame_equal(from_json, frame)
    rescored = members_frame(records, rubric=Rubric.default())
    pd.testing.assert_series_equal(rescored["score"], frame["score"])
    with pytest.raises(ValueError, match="not an ensemble record"):
        members_frame(RepeatJudge(FixedJudge("a", (1, 1, 1, 1)), 1).judge_many(views, progress=False))


def test_ensemble_member_failure_is_recorded_and_all_failed_is_an_error():
    view = make_views(1)[0]
    rec = EnsembleJudge([FixedJudge("a", (6, 6, 6, 6)), FixedJudge("b", (0, 0, 0, 0), fail=True),
                         RaisingJudge("c", (0, 0, 0, 0))], "median").judge(view)
    assert rec.judged and rec.verdict.sql_quality == 6 and rec.extra["n_judged"] == 1
    errors = {m["judge_id"]: m["error"] for m in rec.extra["members"]}
    assert errors["b"] == "b is down" and "bug in a judge" in errors["c"]
    dead = EnsembleJudge([FixedJudge("a", (1, 1, 1, 1), fail=True), FixedJudge("b", (1, 1, 1, 1), fail=True)])
    failed = dead.judge(view)
    assert not failed.judged and "all 2 ensemble members failed" in failed.error


def test_ensemble_majority_tie_breaks_towards_the_worse_band_and_lower_value():
    rec = EnsembleJudge([FixedJudge("a", (9, 9, 9, 9), "good"), FixedJudge("b", (3, 3, 3, 3), "poor")],
                        "majority").judge(make_views(1)[0])
    assert rec.verdict.verdict == "poor" and rec.verdict.intent_understood == 3


def test_ensemble_members_are_cached_individually(tmp_path):
    a, b = FixedJudge("a", (5, 5, 5, 5)), FixedJudge("b", (7, 7, 7, 7))
    cache = VerdictCache(tmp_path / "c.sqlite")
    views = make_views(3)
    EnsembleJudge([a, b]).judge_many(views, cache=cache, progress=False)
    again = EnsembleJudge([a, b]).judge_many(views, cache=cache, progress=False)
    assert len(a.calls) == len(b.calls) == 3 and len(cache) == 6
    assert all(all(m["cached"] for m in r.extra["members"]) for r in again)


def test_ensemble_needs_two_members_and_a_known_reducer():
    with pytest.raises(ValueError, match="at least 2"):
        EnsembleJudge([FixedJudge("a", (1, 1, 1, 1))])
    with pytest.raises(ValueError, match="reducer"):
        EnsembleJudge([FixedJudge("a", (1, 1, 1, 1)), FixedJudge("b", (1, 1, 1, 1))], "mode")


# -- noise -----------------------------------------------------------------------------------------------
def test_noise_is_seeded_order_independent_clamped_and_labelled():
    views = make_views(30)
    inner = FixedJudge("a", (10, 0, 5, 5))
    judge = NoiseJudge(inner, sd=2.0, seed=7)
    assert judge.judge_id == "noise(sd=2.0,seed=7)[a]"
    forward = judge.judge_many(views, progress=False)
    backward = NoiseJudge(inner, sd=2.0, seed=7).judge_many(list(reversed(views)), progress=False)
    assert [r.verdict for r in forward] == [r.verdict for r in reversed(backward)]
    values = [getattr(r.verdict, d) for r in forward for d in DIMENSIONS]
    assert all(isinstance(v, int) and 0 <= v <= 10 for v in values)
    assert len({r.verdict.result_relevance for r in forward}) > 1  # noise actually moves scores
    assert all(r.extra["simulation"] and r.extra["simulated"] and r.verdict.explanation.startswith("[SIMULATED NOISE")
               for r in forward)
    other_seed = NoiseJudge(inner, sd=2.0, seed=8).judge_many(views, progress=False)
    assert [r.verdict for r in other_seed] != [r.verdict for r in forward]
    # the noise of a record depends on the sample index too
    assert NoiseJudge(inner, 2.0, 7).judge(views[0], 1).extra["noise_draws"] != forward[0].extra["noise_draws"]


def test_noise_sd_zero_is_identity_and_null_stays_null():
    view = make_views(1, answer=None)[0]
    rec = NoiseJudge(FixedJudge("a", (3, 4, 5, None)), sd=0.0, seed=1).judge(view)
    assert rec.subscores() == {"intent_understood": 3, "sql_quality": 4, "result_relevance": 5,
                               "answer_faithfulness": None}


def test_noise_statistics_match_the_requested_sd():
    views = make_views(400)
    recs = NoiseJudge(FixedJudge("a", (5, 5, 5, 5)), sd=1.0, seed=3).judge_many(views, progress=False)
    deltas = [r.verdict.sql_quality - 5 for r in recs]
    assert abs(statistics.fmean(deltas)) < 0.2
    assert 0.85 < statistics.pstdev(deltas) < 1.25  # sd of rounded N(0, 1) is about 1.04


def test_noise_passes_errors_through():
    rec = NoiseJudge(FixedJudge("a", (1, 1, 1, 1), fail=True), sd=1.0, seed=0).judge(make_views(1)[0])
    assert not rec.judged and "a is down" in rec.error and rec.judge_id.startswith("noise(")


# -- simulate --------------------------------------------------------------------------------------------
def record_with(segment_id: str, sample_index: int, scores: tuple, label: str = "partial") -> JudgeRecord:
    """An inner judge's record, built directly so thousands of samples stay fast."""
    return JudgeRecord(segment_id=segment_id, judge_id="a", model="m", prompt_version="judge_v1",
                       sample_index=sample_index, cost_usd=0.002, input_tokens=900,
                       verdict=Verdict(**dict(zip(DIMENSIONS, scores, strict=True)), verdict=label, explanation="x"))


def test_simulate_is_integer_clamped_deterministic_order_free_and_labelled():
    views = make_views(25)
    inner = FixedJudge("a", (10, 0, 5, 7))
    judge = SimulatedJudge(inner, sd=2.0, difficulty=0.5, seed=11)
    assert judge.judge_id == "simulated(sd=2,difficulty=0.5,edge=0.3,corr=0.5,seed=11)[a]"
    forward = RepeatJudge(judge, 3).judge_many(views, progress=False)
    backward = RepeatJudge(SimulatedJudge(inner, sd=2.0, difficulty=0.5, seed=11), 3).judge_many(
        list(reversed(views)), progress=False)
    key = {(r.segment_id, r.sample_index): r.verdict for r in backward}
    assert all(key[(r.segment_id, r.sample_index)] == r.verdict for r in forward)
    values = [getattr(r.verdict, d) for r in forward for d in DIMENSIONS]
    assert all(isinstance(v, int) and 0 <= v <= 10 for v in values)
    assert len({r.verdict.result_relevance for r in forward}) > 2
    assert all(r.judge_id.startswith("simulated(") and r.extra["simulated"] is True
               and r.verdict.explanation.startswith("[SIMULATED") for r in forward)
    assert forward[0].cost_usd == 0.001 and forward[0].input_tokens == 100  # the inner record's cost is kept
    other = RepeatJudge(SimulatedJudge(inner, sd=2.0, difficulty=0.5, seed=12), 3).judge_many(views, progress=False)
    assert [r.verdict for r in other] != [r.verdict for r in forward]
    # one difficulty per segment, the same on every sample of it
    by_segment: dict[str, set[float]] = {}
    for r in forward:
        by_segment.setdefault(r.segment_id, set()).add(r.extra["difficulty_multiplier"])
    assert all(len(m) == 1 for m in by_segment.values()) and len({m.pop() for m in by_segment.values()}) > 1


def test_simulate_noise_is_larger_mid_range_than_at_the_extremes():
    judge = SimulatedJudge(FixedJudge("a", (0, 0, 0, 0)), sd=1.5, difficulty=0.5, seed=3)
    spread = {}
    for value in (0, 5, 10):
        samples = [judge.perturb(record_with(f"s{i}", j, (value,) * 4)) for i in range(200) for j in range(3)]
        spread[value] = statistics.pstdev(getattr(r.verdict, d) for r in samples for d in DIMENSIONS)
    # shape(5) = 1, shape(0) = shape(10) = edge = 0.3, and the clamp halves the room at the bounds
    assert 1.3 < spread[5] < 1.9
    assert spread[0] < 0.4 * spread[5] and spread[10] < 0.4 * spread[5]
    assert judge.shape(5) == 1.0 and judge.shape(0) == judge.shape(10) == pytest.approx(0.3)
    assert judge.shape(2) == pytest.approx(0.3 + 0.7 * 4 * 0.2 * 0.8)


def test_simulate_difficulty_scales_the_noise_of_a_segment():
    judge = SimulatedJudge(FixedJudge("a", (0, 0, 0, 0)), sd=1.0, difficulty=0.8, seed=5)
    multipliers = np.array([judge.difficulty_multiplier(f"s{i}") for i in range(1000)])
    # log m = difficulty * u - difficulty^2 with u ~ N(0, 1), so that E[m^2] = 1 (sd stays the RMS noise)
    assert np.mean(np.log(multipliers)) == pytest.approx(-0.64, abs=0.08)
    assert np.std(np.log(multipliers)) == pytest.approx(0.8, abs=0.06)
    easy, hard = (f"s{i}" for i in (int(np.argmin(multipliers)), int(np.argmax(multipliers))))
    spread = {seg: statistics.pstdev(getattr(judge.perturb(record_with(seg, j, (5,) * 4)).verdict, d)
                                     for j in range(100) for d in DIMENSIONS) for seg in (easy, hard)}
    assert spread[hard] > 3 * spread[easy]
    assert judge.noise_sd(5, hard) == pytest.approx(multipliers.max())


def test_simulate_moves_the_verdict_with_the_raw_band_and_keeps_nulls_and_errors():
    judge = SimulatedJudge(FixedJudge("a", (0, 0, 0, 0)), sd=2.0, difficulty=0.3, seed=9)
    rubric = Rubric.default()
    moved = 0
    for i in range(300):
        rec = judge.perturb(record_with(f"s{i}", 0, (8, 8, 8, None), "good"))
        assert rec.verdict.answer_faithfulness is None and rec.extra["noise_sd"]["answer_faithfulness"] is None
        raw_band = score_turn(rec.subscores(), {"all_sql_failed": False, "ended_on_failure": False,
                                                "no_tools": False}, rubric).band
        assert rec.verdict.verdict == raw_band  # inner said good = the base raw band, so it follows the raw band
        moved += rec.verdict.verdict != "good"
    assert moved > 30
    identity = SimulatedJudge(FixedJudge("a", (0, 0, 0, 0)), sd=0.0, seed=1).perturb(record_with("s", 0, (3, 4, 5, 6)))
    assert identity.subscores() == {"intent_understood": 3, "sql_quality": 4, "result_relevance": 5,
                                    "answer_faithfulness": 6}
    failed = SimulatedJudge(FixedJudge("a", (1, 1, 1, 1), fail=True), seed=0).judge(make_views(1)[0])
    assert not failed.judged and failed.extra["simulated"] is True and "a is down" in failed.error


def test_simulate_from_the_registry_and_its_parameters():
    judge = build_judge("repeat(simulate(heuristic, sd=1.5, difficulty=0.4, seed=7), 3)")
    assert isinstance(judge.inner, SimulatedJudge) and judge.inner.sd == 1.5 and judge.inner.seed == 7
    assert judge.inner.judge_id.startswith("simulated(sd=1.5,difficulty=0.4,")
    params = simulations(judge)
    assert len(params) == 1 and params[0]["sd"] == 1.5 and params[0]["difficulty"] == 0.4 and params[0]["seed"] == 7
    assert params[0]["label"].startswith("SIMULATED") and "4p(1 - p)" in params[0]["model"]
    assert is_simulated(judge) and not is_simulated(build_judge("heuristic"))
    defaults = build_judge("simulate(heuristic)")
    assert (defaults.sd, defaults.difficulty, defaults.edge, defaults.corr, defaults.seed) == (1.0, 0.5, 0.3, 0.5, 0)
    nested = build_judge("ensemble(noise(heuristic, sd=1), simulate(heuristic, corr=0), heuristic)")
    assert [p["wrapper"] for p in simulations(nested)] == ["noise", "simulate"]
    for spec, problem in [("simulate(heuristic, sd=-1)", "sd must be a number in [0, inf]"),
                          ("simulate(heuristic, edge=2)", "edge must be a number in [0, 1], got 2.0"),
                          ("simulate(heuristic, spread=1)", "unknown keyword 'spread'"),
                          ("simulate(heuristic, seed=x)", "must be an integer")]:
        with pytest.raises(SpecError, match=problem.replace("[", r"\[").replace("]", r"\]")):
            build_judge(spec)


# -- replay ----------------------------------------------------------------------------------------------
def test_replay_serves_stored_records_and_flags_missing(tmp_path):
    views = make_views(3)
    original = RepeatJudge(FixedJudge("a", (4, 5, 6, 7), sample_offset=True), 2).judge_many(views[:2], progress=False)
    run = tmp_path / "2026-07-20T090000Z_eval_a"
    run.mkdir()
    (run / "verdicts.jsonl").write_text("".join(r.to_json_line() + "\n" for r in original), encoding="utf-8")
    replay = ReplayJudge(run)
    assert replay.replayed_judge_ids == ["a"]
    replayed = replay.judge_many(views[:2], samples=2, progress=False)
    assert [r.verdict for r in replayed] == [r.verdict for r in original]
    assert all(r.judge_id == "a" and r.extra["replayed_from"].endswith("verdicts.jsonl") for r in replayed)
    missing = replay.judge(views[2])
    assert not missing.judged and "not in replayed run" in missing.error
    assert "not in replayed run" in replay.judge(views[0], 5).error


def test_replay_rejects_missing_folder_and_bad_lines(tmp_path):
    with pytest.raises(FileNotFoundError, match="verdicts.jsonl"):
        ReplayJudge(tmp_path / "nope")
    (tmp_path / "verdicts.jsonl").write_text('{"segment_id": "t0"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"verdicts.jsonl:1"):
        ReplayJudge(tmp_path)


# -- judge_many robustness -----------------------------------------------------------------------------------
def test_judge_many_turns_exceptions_into_error_records_and_bounds_concurrency():
    class SlowJudge(FixedJudge):
        active = 0
        peak = 0

        async def ajudge(self, view, sample_index=0):
            SlowJudge.active += 1
            SlowJudge.peak = max(SlowJudge.peak, SlowJudge.active)
            await asyncio.sleep(0.01)
            SlowJudge.active -= 1
            if view.segment_id == "t2":
                raise RuntimeError("boom")
            return await super().ajudge(view, sample_index)

    records = SlowJudge("s", (1, 2, 3, 4)).judge_many(make_views(12), concurrency=3, progress=False)
    assert SlowJudge.peak == 3
    assert [r.judged for r in records].count(False) == 1
    assert records[2].error == "RuntimeError: boom"
    with pytest.raises(ValueError, match="concurrency"):
        SlowJudge("s", (1, 2, 3, 4)).judge_many(make_views(1), concurrency=0)


# -- unscorable members and combinations ---------------------------------------------
FAITH_ONLY = {"intent_understood": 0, "sql_quality": 0, "result_relevance": 0, "answer_faithfulness": 1}


def _sample_views():
    from axon_eval.evidence import load_turns
    from axon_eval.judges.heuristic import HeuristicJudge

    turns, _invalid = load_turns("data/turns/sample_turns.jsonl")
    views = build_views(turns, Rubric.default())
    heuristic = HeuristicJudge()
    faith = {v.segment_id: heuristic.judge(v).verdict.answer_faithfulness for v in views}
    null = [v for v in views if faith[v.segment_id] is None]
    uncapped = [v for v in views if faith[v.segment_id] is not None
                and not any(getattr(v.facts, f) for f in ("all_sql_failed", "ended_on_failure", "no_tools"))]
    assert null and uncapped  # the sample holds segments without an answer, and uncapped answered ones
    return turns, null, uncapped, faith


def test_ensemble_under_a_faithfulness_only_rubric_reports_null_faithfulness_unscorable():
    from axon_eval.judges.heuristic import HeuristicJudge
    from axon_eval.runs.rows import SegmentItem, results_frame, score_pair
    from axon_eval.scoring import UNSCORABLE_PREFIX, UnscorableError
    from axon_eval.summaries import segment_table

    turns, null, uncapped, faith = _sample_views()
    rubric = Rubric.default().with_weights(FAITH_ONLY)
    ens = EnsembleJudge([HeuristicJudge(), HeuristicJudge(lexicon="none")], rubric=rubric)
    view = null[0]
    rec = ens.judge(view)  # raised UnscorableError out of the ensemble before
    assert rec.judged and rec.verdict.answer_faithfulness is None
    with pytest.raises(UnscorableError) as expected:
        score_turn(rec.verdict.subscores(), view.facts, rubric)
    for m in rec.extra["members"]:
        assert m["band"] is None and m["score"] is None and m["raw_score"] is None and m["error"] is None
        assert m["unscorable_reason"] == expected.value.reason
        assert m["unscorable_reason"].startswith(UNSCORABLE_PREFIX) and "answer_faithfulness" in m["unscorable_reason"]
    assert rec.extra["unscorable_reason"] == expected.value.reason
    assert not any("bands differ" in r for r in rec.extra["disagreement_reasons"])

    # an answered, uncapped segment is scored as before: 10 * faithfulness (all the weight on it)
    other = uncapped[0]
    scored = ens.judge(other)
    assert scored.extra["unscorable_reason"] is None
    for m in scored.extra["members"]:
        assert m["unscorable_reason"] is None and m["band"] in ("good", "partial", "poor")
        assert m["score"] == pytest.approx(10.0 * m["subscores"]["answer_faithfulness"])
    assert scored.extra["members"][0]["score"] == pytest.approx(10.0 * faith[other.segment_id])

    # the run path: the ensemble's record is unjudged "verdict could not be scored: unscorable: ...", and
    # the summaries count the segment unscorable with that reason, never banded poor
    turn = {t.turn_id: t for t in turns}
    rows = []
    for v, r in ((view, rec), (other, scored)):
        facts = {**v.facts.to_dict()} if hasattr(v.facts, "to_dict") else dict(v.facts)
        rows.append(score_pair(SegmentItem.from_view(v, turn[v.turn_id], facts), r, rubric)[0])
    bad, good = rows
    assert bad["status"] == "unjudged" and bad["band"] is None and np.isnan(bad["score"])
    assert bad["error"] == f"verdict could not be scored: {expected.value.reason}"
    assert good["status"] == "judged" and good["score"] == pytest.approx(10.0 * scored.verdict.answer_faithfulness)
    table = segment_table(results_frame(rows)).set_index("segment_id")
    assert table.loc[view.segment_id, "status"] == "unscorable"
    assert expected.value.reason in table.loc[view.segment_id, "error"]
    assert table.loc[other.segment_id, "status"] == "judged"


def test_ensemble_member_unscorable_beside_a_banded_member_is_a_disagreement_never_poor():
    from axon_eval.judges.heuristic import HeuristicJudge

    _turns, null, _uncapped, _faith = _sample_views()
    view = null[0]
    rubric = Rubric.default().with_weights(FAITH_ONLY)
    rec = EnsembleJudge([HeuristicJudge(), FixedJudge("f", (8, 8, 8, 7))], rubric=rubric).judge(view)
    heur, fixed = rec.extra["members"]
    assert heur["band"] is None and heur["unscorable_reason"].startswith("unscorable: ")
    expected = score_turn(dict(zip(DIMENSIONS, (8, 8, 8, 7))), view.facts, rubric)
    assert fixed["score"] == expected.score and fixed["band"] == expected.band and fixed["unscorable_reason"] is None
    assert rec.extra["disagreement"]
    assert rec.extra["disagreement_reasons"][0] == f"1 of 2 scored members unscorable under rubric {rubric.id}: heuristic-rules"
    # the combination keeps the one observed faithfulness, so it is scorable
    assert rec.verdict.answer_faithfulness == 7 and rec.extra["unscorable_reason"] is None


def test_members_frame_rescoring_under_a_faithfulness_only_rubric_leaves_null_members_unbanded():
    from axon_eval.judges.heuristic import HeuristicJudge

    _turns, null, uncapped, _faith = _sample_views()
    views = [null[0], uncapped[0]]
    records = EnsembleJudge([HeuristicJudge(), FixedJudge("f", (8, 8, 8, None))]).judge_many(views, progress=False)
    rubric = Rubric.default().with_weights(FAITH_ONLY)
    frame = members_frame(records, rubric=rubric)  # IndexError (band code 3) before
    assert list(frame.columns) == list(MEMBER_COLUMNS)
    null_faith = frame["answer_faithfulness"].isna()
    assert null_faith.sum() == 3  # both members on the unanswered segment, the fixed member on the other
    assert frame.loc[null_faith, "band"].isna().all() and frame.loc[null_faith, "score"].isna().all()
    assert frame.loc[null_faith, "unscorable_reason"].str.startswith("unscorable: ").all()
    assert not (frame["band"] == "poor").loc[null_faith].any()
    scored = frame.loc[~null_faith]
    assert len(scored) == 1 and scored["unscorable_reason"].isna().all()
    assert scored["score"].iloc[0] == pytest.approx(10.0 * scored["answer_faithfulness"].iloc[0])
    # under the nominal rubric nothing is unscorable and the recorded scores are kept
    nominal = members_frame(records, rubric=Rubric.default())
    assert nominal["unscorable_reason"].isna().all()
    pd.testing.assert_series_equal(nominal["score"], members_frame(records)["score"])
