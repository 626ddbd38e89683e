"""Summaries and figures count segments, not samples.

The results tables here are synthetic (built with pandas and the vectorised scorer), shaped like the
The results of a ``repeat(<spec>, n)`` run: one row per (segment, sample). Every expectation is
recomputed independently with a plain ``groupby`` in the test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from axon_eval import summaries
from axon_eval import reporting as plots
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_frame
from axon_eval.summaries import MixedResultsError, format_summary, segment_table, summarise

SIMULATED_ID = "noise(sd=1.0,seed=1)[heuristic]"
N_SEGMENTS, N_SAMPLES = 97, 5


def repeated_results(n_segments: int = N_SEGMENTS, n_samples: int = N_SAMPLES, *, judge_id: str = SIMULATED_ID,
                     rubric: Rubric | None = None, seed: int = 0) -> pd.DataFrame:
    """A results table of a repeated run: per segment a "true" subscore vector, per sample integer noise
    of -1..+1 on each dimension; every tenth segment had no tools (capped at 40); the verdict of sample 0
    of every fourth segment disagrees with its band."""
    rubric = rubric or Rubric.default()
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 11, size=(n_segments, len(DIMENSIONS)))
    rows = []
    for s in range(n_segments):
        for k in range(n_samples):
            values = np.clip(truth[s] + rng.integers(-1, 2, size=len(DIMENSIONS)), 0, 10)
            row = {"segment_id": f"seg-{s:03d}", "turn_id": f"seg-{s:03d}", "sample_index": k,
                   "region": ("eu", "us")[s % 2], "surface": ("web", "slack", "mcp")[s % 3],
                   "client": f"client-{'abc'[s % 3]}", "question": f"question {s}?"}
            row.update({d: float(v) for d, v in zip(DIMENSIONS, values, strict=True)})
            if s % 7 == 3:
                row["answer_faithfulness"] = np.nan  # no answer captured: null, never 0
            row.update({f: False for f in CAP_FACTS})
            row["no_tools"] = s % 10 == 0
            rows.append(row)
    frame = score_frame(pd.DataFrame(rows), rubric)
    frame["band"] = frame["band"].astype(object)
    frame["caps_applied"] = np.where(frame["no_tools"] & (frame["raw_score"] > rubric.caps.no_tools), "no_tools", "")
    frame["judge_verdict"] = frame["band"]
    contrary = (frame["sample_index"] == 0) & (frame["segment_id"].str[-3:].astype(int) % 4 == 0)
    frame.loc[contrary, "judge_verdict"] = frame.loc[contrary, "band"].map(
        {"good": "poor", "partial": "good", "poor": "good"})
    frame["notes"] = ""
    frame["recovered_errors"] = 0
    frame["status"] = "judged"
    frame["error"] = None
    frame["judge_id"] = judge_id
    frame["rubric_id"] = rubric.id
    return frame


def make_unjudged(frame: pd.DataFrame, mask: pd.Series, error: str) -> pd.DataFrame:
    out = frame.copy()
    for c in (*DIMENSIONS, "raw_score", "score"):
        out.loc[mask, c] = np.nan
    out.loc[mask, ["band", "judge_verdict"]] = None
    out.loc[mask, "status"] = "unjudged"
    out.loc[mask, "error"] = error
    out.loc[mask, "caps_applied"] = ""
    return out


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return repeated_results()


def expected_per_segment(results: pd.DataFrame, rubric: Rubric | None = None) -> pd.DataFrame:
    """The definitions of the module docstring, recomputed with a plain groupby."""
    rubric = rubric or Rubric.default()
    j = results[results["status"] == "judged"]
    g = j.groupby("segment_id")
    out = pd.DataFrame({"mean": g["score"].mean(), "sd": g["score"].std(ddof=1),
                        "range": g["score"].max() - g["score"].min(), "n": g.size(),
                        "band_varies": g["band"].nunique() > 1})
    out["band"] = [rubric.band(round(m, 1)) for m in out["mean"]]
    return out


# -- segment table -------------------------------------------------------------------------------
def test_segment_table_has_one_row_per_segment_with_mean_spread_and_band_of_the_mean(results):
    table = segment_table(results).set_index("segment_id")
    expected = expected_per_segment(results)
    assert len(table) == N_SEGMENTS and (table["n_samples"] == N_SAMPLES).all()
    assert list(table.index) == sorted(table.index)  # first-appearance order
    np.testing.assert_allclose(table.loc[expected.index, "score"], expected["mean"])
    np.testing.assert_allclose(table.loc[expected.index, "score_sd"], expected["sd"])
    np.testing.assert_allclose(table.loc[expected.index, "score_range"], expected["range"])
    assert (table.loc[expected.index, "band"] == expected["band"]).all()
    assert (table.loc[expected.index, "band_varies"] == expected["band_varies"]).all()
    assert expected["band_varies"].any() and not expected["band_varies"].all()
    for d in DIMENSIONS:
        means = results.groupby("segment_id")[d].mean()
        np.testing.assert_allclose(table.loc[means.index, d], means)
    # a segment with no answer captured keeps a null faithfulness, never 0
    assert table.loc["seg-003", "answer_faithfulness"] != table.loc["seg-003", "answer_faithfulness"]


def test_one_sample_per_segment_gives_the_rows_themselves(results):
    single = results[results["sample_index"] == 0].reset_index(drop=True)
    table = segment_table(single)
    pd.testing.assert_series_equal(table["score"], single["score"], check_names=False)
    assert table["band"].tolist() == single["band"].tolist()
    assert table["judge_verdict"].tolist() == single["judge_verdict"].tolist()
    assert table["score_sd"].isna().all() and not table["band_varies"].any()
    s = summarise(single)
    assert s["segments"] == s["rows"] == s["judged"] == N_SEGMENTS and not s["repeated"]
    assert s["spread"] is None and s["band_varies"] == {"count": 0, "share": None, "of": 0}
    row_agreement = (single["judge_verdict"] == single["band"]).mean()
    assert s["verdict_agreement"] == pytest.approx(row_agreement)
    assert "several judge samples" not in format_summary(s)


def test_modal_verdict_ties_go_to_the_worse_band():
    frame = repeated_results(2, 4, seed=3)
    frame["judge_verdict"] = ["good", "poor", "good", "poor",        # tie good/poor -> poor
                              "good", "good", "partial", "poor"]    # good is the mode
    table = segment_table(frame).set_index("segment_id")
    assert table.loc["seg-000", "judge_verdict"] == "poor"
    assert table.loc["seg-001", "judge_verdict"] == "good"
    sample_share = (frame["judge_verdict"] == frame["band"]).groupby(frame["segment_id"]).mean()
    np.testing.assert_allclose(table.loc[sample_share.index, "verdict_agreement"], sample_share)


def test_caps_applied_to_a_segment_are_those_that_bit_in_any_judged_sample(results):
    table = segment_table(results).set_index("segment_id")
    bit = results[results["caps_applied"] == "no_tools"]["segment_id"].unique()
    assert len(bit) and set(table.index[table["caps_applied"] == "no_tools"]) == set(bit)
    assert (table.drop(index=bit)["caps_applied"] == "").all()
    # the example sample is the segment's lowest-scoring one
    lowest = results.loc[results.groupby("segment_id")["score"].idxmin(), ["segment_id", "sample_index"]]
    assert (table.loc[lowest["segment_id"], "sample_index"].to_numpy() == lowest["sample_index"].to_numpy()).all()


# -- summarise / format_summary ------------------------------------------------------------------
def test_summary_of_a_repeated_run_counts_segments_not_samples(results):
    s = summarise(results)
    expected = expected_per_segment(results)
    assert s["segments"] == N_SEGMENTS and s["rows"] == N_SEGMENTS * N_SAMPLES and s["repeated"]
    assert s["samples_per_segment"] == {"min": N_SAMPLES, "max": N_SAMPLES, "mean": N_SAMPLES}
    assert s["judged"] == N_SEGMENTS and s["unjudged"] == 0 and s["failed_samples"] == 0
    assert sum(s["band_counts"].values()) == N_SEGMENTS
    assert s["band_counts"] == {b: int((expected["band"] == b).sum()) for b in BANDS}
    assert s["band_shares"]["good"] == pytest.approx((expected["band"] == "good").mean())
    assert s["score"]["mean"] == pytest.approx(expected["mean"].mean())
    assert s["score"]["min"] == pytest.approx(expected["mean"].min())
    assert s["spread"]["sd_mean"] == pytest.approx(expected["sd"].mean())
    assert s["spread"]["sd_max"] == pytest.approx(expected["sd"].max())
    assert s["spread"]["range_max"] == pytest.approx(expected["range"].max())
    assert s["band_varies"] == {"count": int(expected["band_varies"].sum()),
                                "share": pytest.approx(expected["band_varies"].mean()), "of": N_SEGMENTS}
    assert s["lowest"]["segment_id"] == expected["mean"].idxmin()
    assert s["simulated"] and s["judge_ids"] == [SIMULATED_ID]

    text = format_summary(s)
    assert f"judged: {N_SEGMENTS}" in text and f"judged: {N_SEGMENTS * N_SAMPLES}" not in text
    assert f"segments: {N_SEGMENTS} x {N_SAMPLES} judge samples" in text
    assert "several judge samples" in text and "per-segment mean score: mean" in text
    assert f"band varies across samples: {s['band_varies']['count']} of {N_SEGMENTS} segments" in text
    assert "within-segment spread: SD mean" in text and "SIMULATED judge" in text


def test_verdict_agreement_is_per_segment(results):
    s = summarise(results)
    table = segment_table(results)
    assert s["verdict_agreement"] == pytest.approx((table["judge_verdict"] == table["band"]).mean())
    per_sample = (results["judge_verdict"] == results["band"]).groupby(results["segment_id"]).mean()
    assert s["verdict_agreement_samples"] == pytest.approx(per_sample.mean())
    assert summaries.verdict_agreement(results) == pytest.approx(s["verdict_agreement"])


def test_unjudged_segments_and_failed_samples_are_listed_never_scored_as_zero(results):
    frame = make_unjudged(results, results["segment_id"] == "seg-005", "judge could not grade seg-005: HTTP 529")
    frame = make_unjudged(frame, (frame["segment_id"] == "seg-006") & (frame["sample_index"] == 2),
                          "judge reply could not be parsed")
    s = summarise(frame)
    assert s["segments"] == N_SEGMENTS and s["judged"] == N_SEGMENTS - 1 and s["unjudged"] == 1
    assert s["failed_samples"] == 1
    assert [u["segment_id"] for u in s["unjudged_items"]] == ["seg-005"]
    assert "HTTP 529" in s["unjudged_items"][0]["error"] and s["unjudged_items"][0]["n_samples"] == N_SAMPLES
    assert s["failed_sample_items"] == [{"segment_id": "seg-006", "turn_id": "seg-006", "sample_index": 2,
                                         "judge_id": SIMULATED_ID, "error": "judge reply could not be parsed"}]
    table = segment_table(frame).set_index("segment_id")
    kept = frame[(frame["segment_id"] == "seg-006") & (frame["status"] == "judged")]["score"]
    assert table.loc["seg-006", "score"] == pytest.approx(kept.mean()) and table.loc["seg-006", "n_judged"] == 4
    assert table.loc["seg-005", "status"] == "unjudged" and np.isnan(table.loc["seg-005", "score"])
    assert sum(s["band_counts"].values()) == N_SEGMENTS - 1
    assert s["score"]["min"] == pytest.approx(expected_per_segment(frame)["mean"].min())
    text = format_summary(s)
    assert "UNJUDGED seg-005: judge could not grade seg-005: HTTP 529" in text
    assert "FAILED SAMPLE seg-006 sample 2: judge reply could not be parsed" in text
    assert "failed samples: 1" in text


def test_mixed_judge_or_rubric_ids_are_refused_unless_allowed(results):
    other = results.assign(judge_id="heuristic")
    mixed = pd.concat([results, other], ignore_index=True)
    with pytest.raises(MixedResultsError, match="heuristic.*noise"):
        summarise(mixed)
    with pytest.raises(MixedResultsError, match="rubric ids"):
        summarise(results.assign(rubric_id=np.where(results["sample_index"] == 0, "aaa", "bbb")))
    for table in (summaries.band_table, summaries.cap_table, summaries.verdict_crosstab, summaries.dimension_table):
        with pytest.raises(MixedResultsError):
            table(mixed)
    s = summarise(mixed, allow_mixed=True)
    assert s["mixed"].startswith("MIXED RESULTS") and "MIXED RESULTS" in format_summary(s)


def test_band_edges_of_a_mean_come_from_the_rubric_given(results):
    strict = Rubric.default().replace(bands={"good": 90.0, "partial": 60.0})
    s = summarise(results, rubric=strict)
    expected = expected_per_segment(results, strict)
    assert s["band_counts"] == {b: int((expected["band"] == b).sum()) for b in BANDS}
    assert s["band_edges"] == {"good": 90.0, "partial": 60.0, "rubric": strict.label}
    assert s["notes"] and strict.label in s["notes"][0] and Rubric.default().id in s["notes"][0]
    assert summarise(results)["notes"] == []


def test_every_table_counts_segments(results):
    n = N_SEGMENTS
    assert summaries.band_table(results)["count"].sum() == n
    assert summaries.verdict_crosstab(results).loc["total", "total"] == n
    assert summaries.breakdown(results, "region")["segments"].sum() == n
    assert (summaries.dimension_table(results)["observed"] + summaries.dimension_table(results)["null"] == n).all()
    caps = summaries.cap_table(results)
    assert caps.loc["no_tools", "triggered"] == len(range(0, n, 10))
    worst = summaries.worst_segments(results, 5)
    assert len(worst) == 5 and worst["segment_id"].is_unique and worst["score"].is_monotonic_increasing
    assert summaries.lowest_scores(results, 3)["segment_id"].is_unique
    assert len(summaries.unjudged_table(results)) == 0 and len(summaries.failed_samples_table(results)) == 0


def test_summaries_are_pure(results):
    before = results.copy()
    summarise(results)
    segment_table(results)
    summaries.breakdown(results, ["region", "surface"])
    pd.testing.assert_frame_equal(results, before)


def test_simulated_judges_are_recognised():
    assert summaries.is_simulated_judge("noise(sd=1.0,seed=1)[heuristic]")
    assert summaries.is_simulated_judge(["heuristic", "simulated(difficulty=0.3)[x]"])
    assert summaries.is_simulated_judge("repeat(n=5)[noise(sd=1,seed=2)[anthropic:claude]]")
    assert not summaries.is_simulated_judge("anthropic:claude-haiku-4-5@judge_v1,t=default")
    assert not summaries.is_simulated_judge(None)


def test_empty_results_summarise_to_zero_segments():
    empty = repeated_results(1, 1).iloc[:0]
    s = summarise(empty)
    assert s["segments"] == 0 and s["judged"] == 0 and s["score"]["mean"] is None and s["lowest"] is None
    assert "segments: 0" in format_summary(s)


# -- figures of a repeated run -------------------------------------------------------------------
def _titles(fig) -> str:
    texts = [ax.get_title() for ax in fig.axes]
    if fig._suptitle is not None:
        texts.append(fig._suptitle.get_text())
    return " | ".join(texts)


def test_figures_of_a_repeated_run_use_per_segment_means(results):
    fig = plots.score_distribution(results)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert sum(heights) == N_SEGMENTS
    assert f"per-segment mean of {N_SAMPLES} samples" in _titles(fig)
    dims = plots.dimension_distributions(results)
    for ax in dims.axes:
        nulls = int(ax.get_title().split("(")[1].split()[0]) if "null" in ax.get_title() else 0
        assert sum(p.get_height() for p in ax.patches) + nulls == N_SEGMENTS
    heat = plots.verdict_band_heatmap(results)
    assert sum(int(t.get_text()) for t in heat.axes[0].texts) == N_SEGMENTS
    assert set(plots.standard_figures(results)) >= {"score_distribution", "dimensions", "caps",
                                                    "verdict_vs_band", "score_spread"}


def test_every_figure_of_a_simulated_judge_says_simulated(results):
    figures = {**plots.standard_figures(results), "bands_by_region": plots.band_shares_by(results, "region")}
    for name, fig in figures.items():
        assert "SIMULATED" in _titles(fig), name
    real = results.assign(judge_id="anthropic:claude-haiku-4-5@judge_v1,t=default")
    for name, fig in plots.standard_figures(real).items():
        assert "SIMULATED" not in _titles(fig), name
    assert "SIMULATED" in _titles(plots.score_distribution(real, simulated=True))


def test_saved_standard_figures_include_the_spread_of_a_repeated_run(results, tmp_path):
    paths = plots.save_standard_figures(results, None, tmp_path)
    assert {p.name for p in paths} == {"score_distribution.png", "dimensions.png", "caps.png",
                                       "verdict_vs_band.png", "score_spread.png"}
    assert all(p.read_bytes().startswith(plots.PNG_SIGNATURE) for p in paths)
    single = plots.save_standard_figures(results[results["sample_index"] == 0], None, tmp_path / "one")
    assert "score_spread.png" not in {p.name for p in single}


# -- unscorable segments and the rounding of a mean ----------------------------------------------
FAITH_ONLY = Rubric.default().with_weights({"intent_understood": 0, "sql_quality": 0, "result_relevance": 0,
                                            "answer_faithfulness": 1})


def test_unscorable_segments_are_counted_apart_never_banded_poor():
    # Scored with all the weight on faithfulness: the segments whose faithfulness is null (s % 7 == 3)
    # cannot be scored. Before, score_frame banded them "poor" and band_table counted them as poor.
    frame = repeated_results(n_samples=1, rubric=FAITH_ONLY)
    null_faith = frame["answer_faithfulness"].isna()
    assert null_faith.sum() == 14 and frame.loc[null_faith, "band"].isna().all()
    scorable = frame.loc[~null_faith]
    expected_poor = int((10 * scorable["answer_faithfulness"].clip(0, 10)).pipe(
        lambda v: v.where(~scorable["no_tools"], v.clip(upper=40))).lt(50).sum())
    s = summarise(frame, rubric=FAITH_ONLY)
    assert (s["judged"], s["unjudged"], s["unscorable"]) == (N_SEGMENTS - 14, 0, 14)
    assert s["band_counts"]["poor"] == expected_poor
    assert sum(s["band_counts"].values()) == N_SEGMENTS - 14
    assert sum(s["band_shares"].values()) == pytest.approx(1.0)
    ids = sorted(frame.loc[null_faith, "segment_id"])
    assert sorted(i["segment_id"] for i in s["unscorable_items"]) == ids
    assert all("no weight on the observed dimensions" in i["error"] for i in s["unscorable_items"])
    table = summaries.band_table(frame, rubric=FAITH_ONLY)
    assert table.loc["poor", "count"] == expected_poor and table["count"].sum() == N_SEGMENTS - 14
    assert summaries.cap_table(frame, rubric=FAITH_ONLY)["triggered"].loc["no_tools"] == int(
        scorable["no_tools"].sum())
    assert summaries.breakdown(frame, "region", rubric=FAITH_ONLY)["unscorable"].sum() == 14
    text = format_summary(s)
    assert "unscorable: 14" in text and text.count("UNSCORABLE seg-") == 14


def test_a_run_row_the_scorer_refused_is_unscorable_with_its_reason(results):
    # A run records an UnscorableError as an unjudged row whose error carries the scorer's reason.
    from axon_eval.scoring import UnscorableError, score_turn

    with pytest.raises(UnscorableError) as err:
        score_turn({"intent_understood": 5, "sql_quality": 5, "result_relevance": 5, "answer_faithfulness": None},
                   dict.fromkeys(CAP_FACTS, False), FAITH_ONLY)
    frame = make_unjudged(results, results["segment_id"] == "seg-010", f"verdict could not be scored: {err.value}")
    frame = make_unjudged(frame, results["segment_id"] == "seg-011", "judge could not grade: HTTP 529")
    s = summarise(frame)
    assert (s["unjudged"], s["unscorable"]) == (1, 1)
    assert [i["segment_id"] for i in s["unscorable_items"]] == ["seg-010"]
    assert [i["segment_id"] for i in s["unjudged_items"]] == ["seg-011"]
    assert segment_table(frame).set_index("segment_id").loc["seg-010", "status"] == "unscorable"


def test_band_of_a_mean_score_rounds_the_exact_value_half_away_from_zero():
    # Samples 79.8 and 80.1: the mean is exactly 79.95, binary 79.94999999999999; half away from zero
    # gives 80.0, good (pandas' round gave 79.9, partial).
    frame = repeated_results(n_segments=2, n_samples=2)
    frame.loc[frame["segment_id"] == "seg-000", "score"] = [79.8, 80.1]
    table = segment_table(frame).set_index("segment_id")
    assert table.loc["seg-000", "band"] == "good"
