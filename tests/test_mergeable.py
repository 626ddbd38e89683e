"""Statistics from mergeable parts: partial sums per partition of whole turns, merged, give the headline
figures of the whole run.

Oracles: :func:`axon_eval.stats.intervals.headline_table` on the whole run (estimates, n, turns, notes,
Wilson rows), the multinomial :func:`~axon_eval.stats.intervals.cluster_bootstrap` (intervals, in a
SIMULATED study), the Poisson(1) law itself (the weights), ``hashlib`` and a plain-Python SplitMix64
(the documented hash), ``sklearn.metrics.cohen_kappa_score`` (kappa) and
:func:`axon_eval.stats.ppi.ppi_mean` on the whole run (PPI++).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score
from threadpoolctl import threadpool_limits

from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_frame
from axon_eval.stats import mergeable as mg
from axon_eval.stats.intervals import (
    HEADLINE_COLUMNS,
    cluster_bootstrap,
    figure_values,
    headline_segments,
    headline_table,
)
from axon_eval.stats.mergeable import (
    FIGURES,
    POISSON1_CDF,
    POISSON_METHOD,
    PartialSums,
    confusion_from_summary,
    headline_from_summary,
    kappa_from_summary,
    merge_summaries,
    partition_summary,
    poisson_weights,
    ppi_from_summary,
    replicate_keys,
    segments_summary,
    turn_keys,
)
from axon_eval.stats.ppi import ppi_mean
from axon_eval.summaries import MixedResultsError


def run_results(n_turns: int = 60, *, bundled_every: int = 0, samples: int = 1, seed: int = 0,
                unjudged_every: int = 0) -> pd.DataFrame:
    """A synthetic ``results`` frame: ``n_turns`` turns, every ``bundled_every``-th split into 1-3 segments
    (``turn#1..``) sharing a turn-level quality, ``samples`` judge samples per segment (+-1 noise), every
    9th turn without tools (capped), every 7th row with no answer (null faithfulness), every
    ``unjudged_every``-th row unjudged (a judge error)."""
    rubric = Rubric.default()
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_turns):
        turn = f"eu-{t:04d}"
        n_seg = int(rng.integers(2, 4)) if bundled_every and t % bundled_every == 0 else 1
        quality = rng.integers(0, 11, size=len(DIMENSIONS))
        for s in range(n_seg):
            seg = f"{turn}#{s + 1}" if n_seg > 1 else turn
            truth = np.clip(quality + rng.integers(-1, 2, size=len(DIMENSIONS)), 0, 10)
            for k in range(samples):
                values = np.clip(truth + (rng.integers(-1, 2, size=len(DIMENSIONS)) if samples > 1 else 0), 0, 10)
                row = {"segment_id": seg, "turn_id": turn, "sample_index": k, "surface": "web"}
                row.update({d: float(v) for d, v in zip(DIMENSIONS, values, strict=True)})
                if len(rows) % 7 == 3:
                    row["answer_faithfulness"] = np.nan
                row.update({f: False for f in CAP_FACTS})
                row["no_tools"] = t % 9 == 0
                rows.append(row)
    frame = score_frame(pd.DataFrame(rows), rubric)
    frame["band"] = frame["band"].astype(object)
    frame["caps_applied"] = np.where(frame["no_tools"] & (frame["raw_score"] > rubric.caps.no_tools), "no_tools", "")
    frame["status"] = "judged"
    frame["error"] = None
    if unjudged_every:
        bad = np.arange(len(frame)) % unjudged_every == 1
        frame.loc[bad, "status"] = "unjudged"
        frame.loc[bad, "error"] = "judge error: timeout"
        frame.loc[bad, ["score", "raw_score", *DIMENSIONS]] = np.nan
        frame.loc[bad, "band"] = None
    frame["judge_id"] = "heuristic"
    frame["rubric_id"] = rubric.id
    return frame


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The products here are small: one BLAS thread avoids a thread start-up per call on a busy machine."""
    with threadpool_limits(1):
        yield


@functools.cache
def _frame(kind: str) -> pd.DataFrame:
    return {"single": lambda: run_results(60, seed=1, unjudged_every=11),
            "bundled": lambda: run_results(60, bundled_every=3, seed=2, unjudged_every=13),
            "repeated": lambda: run_results(45, bundled_every=4, samples=3, seed=3, unjudged_every=17)}[kind]()


@functools.cache
def _reference(kind: str) -> pd.DataFrame:
    return headline_table(_frame(kind), n_boot=200)


def parts_of(results: pd.DataFrame, assignment: dict[str, int]) -> list[pd.DataFrame]:
    """The results split by turn: ``assignment[turn_id]`` names the part (empty parts kept)."""
    part = results["turn_id"].map(assignment).to_numpy()
    return [results.loc[part == k] for k in range(max(assignment.values()) + 1)]


def summaries_of(results: pd.DataFrame, assignment: dict[str, int], **kw) -> list[PartialSums]:
    return [partition_summary(p, **kw) for p in parts_of(results, assignment)]


def random_assignment(results: pd.DataFrame, n_parts: int, seed: int) -> dict[str, int]:
    turns = results["turn_id"].unique()
    return dict(zip(turns, np.random.default_rng(seed).integers(0, n_parts, len(turns)).tolist(), strict=True))


def same_rows(merged: pd.DataFrame, reference: pd.DataFrame) -> None:
    """Estimates to 1e-9; n, turns, kind and notes equal; Wilson rows identical."""
    assert list(merged.columns) == list(HEADLINE_COLUMNS) == list(reference.columns)
    assert merged["figure"].tolist() == reference["figure"].tolist() == list(FIGURES)
    np.testing.assert_allclose(merged["estimate"], reference["estimate"], rtol=0, atol=1e-9, equal_nan=True)
    for col in ("kind", "n", "n_clusters", "note"):
        assert merged[col].tolist() == reference[col].tolist(), col
    wilson = reference["method"] == "wilson"
    pd.testing.assert_frame_equal(merged.loc[wilson].reset_index(drop=True),
                                  reference.loc[wilson].reset_index(drop=True))
    boot = ~wilson
    assert (merged.loc[boot, "method"] == POISSON_METHOD).all()


# -- (a) merged point estimates equal the whole run's -------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["single", "bundled", "repeated"]), n_parts=st.integers(1, 6),
       data=st.data())
def test_merged_estimates_equal_headline_table_for_any_partition(kind, n_parts, data):
    """Any split of the turns into parts (some parts may be empty): the merged summary's figures are
    headline_table's, and the merged arrays are exactly those of the whole run."""
    results = _frame(kind)
    turns = results["turn_id"].unique().tolist()
    labels = data.draw(st.lists(st.integers(0, n_parts - 1), min_size=len(turns), max_size=len(turns)), label="parts")
    assignment = dict(zip(turns, labels, strict=True))
    merged = merge_summaries(summaries_of(results, assignment, n_boot=60))
    same_rows(headline_from_summary(merged), _reference(kind))
    whole = partition_summary(results, n_boot=60)
    assert merged == whole
    assert merged.n_segments == results["segment_id"].nunique()


@pytest.mark.parametrize("kind", ["single", "bundled", "repeated"])
def test_merge_order_and_grouping_do_not_matter_exactly(kind):
    results = _frame(kind)
    parts = summaries_of(results, random_assignment(results, 5, seed=11), n_boot=100)
    reference = merge_summaries(parts)
    for perm in itertools.islice(itertools.permutations(parts), 0, None, 17):
        assert merge_summaries(perm) == reference
    a, b, c, d, e = parts
    assert merge_summaries([merge_summaries([a, b]), merge_summaries([c, d, e])]) == reference
    assert merge_summaries([a, merge_summaries([b, merge_summaries([c, merge_summaries([d, e])])])]) == reference
    for field in PartialSums._ARRAYS:
        assert np.array_equal(getattr(merge_summaries(parts[::-1]), field), getattr(reference, field),
                              equal_nan=True), field
    assert reference == partition_summary(results, n_boot=100)


def test_repeated_run_collapses_samples_per_segment_within_the_part():
    """A repeated run: the mean of each segment's judged samples, the band of that mean, as segment_table."""
    results = _frame("repeated")
    merged = merge_summaries(summaries_of(results, random_assignment(results, 3, seed=4), n_boot=50))
    seg = headline_segments(results)
    assert merged.n_judged == len(seg) and merged.n_turns == seg["cluster"].nunique()
    assert merged.score_sum == pytest.approx(seg["score"].sum(), abs=1e-9)
    assert merged.band_counts == {b: int((seg["band"] == b).sum()) for b in BANDS}
    assert merged.n_capped == int(seg["capped"].sum())
    for d in DIMENSIONS:
        assert merged.dimension_counts()[d] == int(seg[d].notna().sum())
        assert merged.dimension_sums()[d] == pytest.approx(seg[d].sum(), abs=1e-9)


def test_wilson_rows_when_every_turn_has_one_segment():
    results = _frame("single")
    table = headline_from_summary(merge_summaries(summaries_of(results, random_assignment(results, 3, seed=1))))
    shares = table.loc[table["kind"] == "share"]
    assert (shares["method"] == "wilson").all() and shares["seed"].isna().all()
    means = table.loc[table["kind"] == "mean"]
    assert (means["method"] == POISSON_METHOD).all() and (means["seed"] == 0).all() and (means["n_boot"] == 2000).all()


def test_bootstrap_rows_close_to_the_multinomial_ones():
    """Same data, 2,000 replicates each: the Poisson and multinomial percentile bounds differ by Monte
    Carlo error only (each about 3% of the width in sd; allowed 15%)."""
    results = _frame("bundled")
    poisson = headline_from_summary(partition_summary(results))
    multinomial = headline_table(results)
    boot = (poisson["method"] == POISSON_METHOD).to_numpy()
    width = (multinomial["hi"] - multinomial["lo"]).to_numpy()[boot]
    for bound in ("lo", "hi"):
        diff = np.abs(poisson[bound].to_numpy()[boot] - multinomial[bound].to_numpy()[boot])
        assert (diff < 0.15 * width).all(), (bound, diff / width)


def test_confidence_is_chosen_when_reading_and_attrs():
    results = _frame("bundled")
    summary = partition_summary(results, n_boot=400, seed=5)
    t90, t99 = headline_from_summary(summary, 0.90), headline_from_summary(summary, 0.99)
    assert ((t90["hi"] - t90["lo"]) < (t99["hi"] - t99["lo"])).all()
    assert t90.attrs["confidence"] == 0.90 and t90.attrs["seed"] == 5 and t90.attrs["n_boot"] == 400
    assert t90.attrs["cluster"] == "turn_id" and "sampling of turns" in t90.attrs["covers"]
    reps = mg.bootstrap_replicates(summary, "mean score")
    row = t90.set_index("figure").loc["mean score"]
    np.testing.assert_allclose([row["lo"], row["hi"]], np.quantile(reps, [0.05, 0.95]), rtol=1e-12)


def test_edge_rows_match_headline_table():
    """No value at all, one turn, undefined replicates: the same n, turns and notes as headline_table."""
    results = run_results(1, bundled_every=1, seed=9)  # one turn of 2-3 segments
    results["answer_faithfulness"] = np.nan
    reference = headline_table(results, n_boot=50)
    merged = headline_from_summary(partition_summary(results, n_boot=50))
    same_rows(merged, reference)
    assert merged.set_index("figure").loc["mean score", "note"] == "fewer than 2 clusters: nothing to resample"
    tiny = run_results(2, seed=3)  # two turns, 1000 replicates: about exp(-2) of them miss both
    row = headline_from_summary(partition_summary(tiny, n_boot=1000)).set_index("figure").loc["mean score"]
    n_undefined = int(row["note"].split(" of ")[0])
    assert 0.06 < n_undefined / 1000 < 0.22 and "replicates undefined and left out" in row["note"]


def test_summary_size_does_not_grow_with_rows_and_blocks_do_not_change_it(monkeypatch):
    small, large = run_results(20, seed=1), run_results(400, bundled_every=2, seed=2)
    a, b = partition_summary(small, n_boot=300), partition_summary(large, n_boot=300)
    assert a.nbytes == b.nbytes < 300 * len(FIGURES) * 4 * 8 + 10_000
    assert b.boot_sums.shape == (300, len(FIGURES), 3) and b.boot_counts.shape == (300, len(FIGURES))
    monkeypatch.setattr(mg, "BLOCK_WEIGHTS", 7 * 300)  # seven turns per block
    assert partition_summary(large, n_boot=300) == b


def test_refusals():
    results = _frame("single")
    a = partition_summary(results.iloc[:30], n_boot=50)
    with pytest.raises(ValueError, match="different seed"):
        merge_summaries([a, partition_summary(results.iloc[30:], n_boot=50, seed=1)])
    with pytest.raises(ValueError, match="different n_boot"):
        merge_summaries([a, partition_summary(results.iloc[30:], n_boot=51)])
    with pytest.raises(ValueError, match="fixed seed"):
        partition_summary(results, seed=None)
    with pytest.raises(ValueError, match="at least one"):
        merge_summaries([])
    other = results.iloc[30:].assign(judge_id="SIMULATED-other")
    mixed = merge_summaries([a, partition_summary(other, n_boot=50)])
    with pytest.raises(MixedResultsError, match="judge ids"):
        headline_from_summary(mixed)
    assert len(headline_from_summary(mixed, allow_mixed=True)) == len(FIGURES)
    with pytest.raises(ValueError, match="within"):
        partition_summary(results.assign(score=1e7), n_boot=10)
    with pytest.raises(ValueError, match="no labels"):
        kappa_from_summary(a)


# -- (b) the Poisson weights --------------------------------------------------------------------------
def _splitmix64_reference(state: int) -> int:
    """Plain-Python SplitMix64 output of ``state`` (Steele, Lea & Flood 2014)."""
    mask = (1 << 64) - 1
    z = state & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_weights_follow_the_documented_hash():
    turn, seed = "eu-0042", 7
    digest = hashlib.blake2b(turn.encode(), digest_size=8, key=seed.to_bytes(8, "little"), person=b"axon-pboot")
    key = int.from_bytes(digest.digest(), "little")
    assert int(turn_keys([turn], seed)[0]) == key
    gamma = 0x9E3779B97F4A7C15
    reps = [_splitmix64_reference((b + 1) * gamma) for b in range(50)]
    assert [int(x) for x in replicate_keys(50)] == reps
    expected = [int(np.searchsorted(POISSON1_CDF, (_splitmix64_reference(key ^ r) >> 11) / 2 ** 53, side="right"))
                for r in reps]
    assert poisson_weights([turn], 50, seed)[0].tolist() == expected
    # the table: P(K <= k) of Poisson(1), ending at 1
    k = np.arange(len(POISSON1_CDF) - 1)
    np.testing.assert_allclose(POISSON1_CDF[:-1], scipy_stats.poisson.cdf(k, 1.0), rtol=0, atol=1e-15)
    assert POISSON1_CDF[-1] == 1.0


def test_weight_table_equals_the_inverse_cdf_on_the_full_uniform():
    """A million weights (about 120 of them in the bins a CDF step crosses): the top-16-bit table gives
    exactly the inverse CDF of the 53-bit uniform."""
    ids = [f"t{i}" for i in range(2000)]
    keys, reps = turn_keys(ids, 5), replicate_keys(500)
    mask = np.uint64((1 << 64) - 1)
    z = keys[:, None] ^ reps[None, :]
    with np.errstate(over="ignore"):
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & mask
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & mask
    z = z ^ (z >> np.uint64(31))
    direct = np.searchsorted(POISSON1_CDF, (z >> np.uint64(11)).astype(np.float64) / 2 ** 53, side="right")
    assert np.array_equal(poisson_weights(ids, 500, 5), direct)
    assert mg._BIN_STRADDLES[(z >> np.uint64(48)).astype(np.intp)].sum() > 50


def test_weights_are_deterministic_and_independent_of_partitioning():
    ids = [f"eu-{i:05d}" for i in range(300)]
    w = poisson_weights(ids, 200, seed=3)
    assert np.array_equal(w, poisson_weights(ids, 200, seed=3))
    order = np.random.default_rng(0).permutation(len(ids))
    assert np.array_equal(poisson_weights([ids[i] for i in order], 200, seed=3), w[order])
    assert np.array_equal(poisson_weights(ids[100:150], 200, seed=3), w[100:150])
    assert np.array_equal(poisson_weights(ids, 50, seed=3), w[:, :50])  # replicate b does not depend on n_boot
    assert not np.array_equal(poisson_weights(ids, 200, seed=4), w)
    # through the summaries: a part's replicate sums are the weights of its own turns only
    results = _frame("bundled")
    parts = parts_of(results, random_assignment(results, 4, seed=2))
    for p in parts:
        seg = headline_segments(p)
        turns = seg["cluster"].unique()
        weights = poisson_weights(turns, 100, seed=0).astype(float)
        sizes = seg.groupby("cluster", sort=False).size().reindex(turns).to_numpy(dtype=float)
        assert np.array_equal(partition_summary(p, n_boot=100).boot_counts[:, 0], weights.T @ sizes)


def test_weights_are_poisson_one():
    """5,000 turns x 1,000 replicates: mean 1 and variance 1 (within 5 standard errors), the frequencies of
    Poisson(1) (chi-square), no correlation between replicates, between turns, or between seeds."""
    ids = [f"turn-{i}" for i in range(5000)]
    w = poisson_weights(ids, 1000, seed=11).astype(np.float64)
    n = w.size
    assert abs(w.mean() - 1) < 5 / math.sqrt(n)
    assert abs(w.var() - 1) < 5 * math.sqrt(3 / n)  # Var(s^2) of Poisson(1) is about (mu4 - 1)/n = 3/n
    counts = np.bincount(w.astype(int).ravel())
    k = 7
    expected = scipy_stats.poisson.pmf(np.arange(k), 1.0) * n
    observed = np.r_[counts[:k], counts[k:].sum()]
    assert scipy_stats.chisquare(observed, np.r_[expected, n - expected.sum()]).pvalue > 1e-3
    se = 1 / math.sqrt(n)
    assert abs(np.corrcoef(w[:, 1:].ravel(), w[:, :-1].ravel())[0, 1]) < 5 * se
    assert abs(np.corrcoef(w[1:].ravel(), w[:-1].ravel())[0, 1]) < 5 * se
    other = poisson_weights(ids, 1000, seed=12).astype(np.float64)
    assert abs(np.corrcoef(w.ravel(), other.ravel())[0, 1]) < 5 * se
    corr = np.corrcoef(w.T)[np.triu_indices(1000, 1)]  # between replicates: each about N(0, 1/5000)
    assert abs(corr.mean()) < 1e-3
    assert abs(corr.std() * math.sqrt(5000) - 1) < 0.05


# -- (c) a SIMULATED study of the intervals -------------------------------------------------------------
MU = 60.0


def simulated_runs(n_reps: int, n_turns: int, seed: int) -> pd.DataFrame:
    """SIMULATED results of ``n_reps`` independent runs of ``n_turns`` turns each (turn ids ``rNNNN-tNNNN``):
    1-3 segments per turn (uniform), score = 60 + turn effect N(0, 8^2) + segment noise N(0, 6^2), so the
    segments of a turn are correlated (intra-turn correlation 0.64) and the true mean score is 60."""
    rng = np.random.default_rng(seed)
    n = n_reps * n_turns
    sizes = rng.integers(1, 4, n)
    turn = np.repeat(np.arange(n), sizes)
    score = MU + rng.normal(0, 8, n)[turn] + rng.normal(0, 6, len(turn))
    index = np.concatenate([np.arange(s) for s in sizes])
    tid = np.array([f"r{i // n_turns:04d}-t{i % n_turns:04d}" for i in range(n)], dtype=object)[turn]
    sid = np.where(sizes[turn] > 1, tid + "#" + (index + 1).astype(str), tid)
    band = np.where(score >= 80, "good", np.where(score >= 50, "partial", "poor"))
    return pd.DataFrame({"segment_id": sid, "turn_id": tid, "sample_index": 0, "status": "judged", "score": score,
                         "band": band, "caps_applied": "", "judge_id": "SIMULATED", "rubric_id": "axon-v1",
                         **{d: np.nan for d in DIMENSIONS}})


def simulated_agreement(n_reps: int = 500, n_turns: int = 300, n_boot: int = 500,
                        seed: int = 20260101) -> dict[str, float]:
    """SIMULATED: ``n_reps`` runs of :func:`simulated_runs`, each summarised in two parts (turns split by
    the parity of their last digit) and merged; the Poisson bootstrap interval of the mean score beside
    the multinomial :func:`cluster_bootstrap` on the same segments (seed ``r`` for run ``r``). Returns the
    coverage of the true mean by each, and the endpoints' mean signed and mean absolute differences and
    the ratio of mean widths, relative to the multinomial interval's mean width. (Run it with more runs:
    ``.venv/bin/python -c "from tests.test_mergeable import simulated_agreement as f; print(f(4000))"``.)"""
    segments = headline_segments(simulated_runs(n_reps, n_turns, seed))
    rep = segments["cluster"].str.slice(1, 5).astype(int).to_numpy()
    rows = []
    with threadpool_limits(1):
        for r in range(n_reps):
            seg = segments.loc[rep == r]
            half = seg["cluster"].str.slice(-1).astype(int).to_numpy() % 2 == 0
            merged = merge_summaries([segments_summary(seg.loc[half], n_boot=n_boot, seed=r),
                                      segments_summary(seg.loc[~half], n_boot=n_boot, seed=r)])
            row = headline_from_summary(merged).iloc[0]
            multi = cluster_bootstrap(seg["score"].to_numpy(), seg["cluster"].to_numpy(), n_boot=n_boot, seed=r)
            rows.append((row["estimate"] - multi.estimate, row["lo"], row["hi"], multi.lo, multi.hi))
    diff, lo, hi, mlo, mhi = np.array(rows).T
    width = (mhi - mlo).mean()
    return {"runs": n_reps, "turns": n_turns, "n_boot": n_boot, "max_estimate_difference": float(np.abs(diff).max()),
            "coverage_poisson": float(np.mean((lo <= MU) & (MU <= hi))),
            "coverage_multinomial": float(np.mean((mlo <= MU) & (MU <= mhi))),
            "lo_mean_difference": float((lo - mlo).mean() / width),
            "hi_mean_difference": float((hi - mhi).mean() / width),
            "lo_mean_abs_difference": float(np.abs(lo - mlo).mean() / width),
            "hi_mean_abs_difference": float(np.abs(hi - mhi).mean() / width),
            "width_ratio": float((hi - lo).mean() / width)}


def test_simulated_poisson_intervals_agree_with_the_multinomial_and_cover():
    """SIMULATED: 500 independent runs of 300 clustered turns (1-3 segments, intra-turn correlation 0.64,
    true mean 60), each summarised in two parts and merged, 500 replicates. The Poisson bootstrap's 95%
    interval of the mean score (a) agrees with the multinomial cluster bootstrap's on the same data: the
    mean signed difference of each endpoint within 2% of the mean width (Monte Carlo error of that mean
    about 0.2%), the mean absolute difference within 6% (about 3.4% expected from two independent sets of
    500 replicates), the mean widths within 3%; (b) covers the true mean in 93-97% of the runs (binomial
    sd about 1 point). These 500 runs: 94.6% (multinomial 94.2%). At 150 turns both percentile
    intervals cover about 94%, the small-sample shortfall of a percentile interval."""
    got = simulated_agreement()
    assert got["max_estimate_difference"] < 1e-9
    for end in ("lo", "hi"):
        assert abs(got[f"{end}_mean_difference"]) < 0.02, got
        assert got[f"{end}_mean_abs_difference"] < 0.06, got
    assert abs(got["width_ratio"] - 1) < 0.03, got
    assert 0.93 <= got["coverage_poisson"] <= 0.97, got


# -- (d) labels: kappa and PPI++ ------------------------------------------------------------------------
def human_labels(segments: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """SIMULATED human labels of ``n`` judged segments: the judge's score + N(3, 8^2), its band, and a
    faithfulness off by -2..2 (null for a fifth)."""
    rng = np.random.default_rng(seed)
    chosen = segments.set_index("segment_id").loc[rng.choice(segments["segment_id"], n, replace=False)]
    score = np.clip(chosen["score"].to_numpy() + rng.normal(3, 8, n), 0, 100)
    faith = np.clip(chosen["answer_faithfulness"].fillna(5).to_numpy() + rng.integers(-2, 3, n), 0, 10)
    return pd.DataFrame({"segment_id": chosen.index, "score": score,
                         "band": np.where(score >= 80, "good", np.where(score >= 50, "partial", "poor")),
                         "answer_faithfulness": np.where(rng.random(n) < 0.2, np.nan, faith)})


@pytest.mark.parametrize("n_labelled", [20, 90])
def test_kappa_and_ppi_from_merged_parts(n_labelled):
    """Every part is handed the whole labels frame; the merged confusion table gives sklearn's kappa and
    the merged sums give ppi_mean on the whole run (lam tuned from 50 labels on, plain PPI below)."""
    results = run_results(200, bundled_every=3, seed=5, unjudged_every=19)
    segments = headline_segments(results)
    labels = human_labels(segments, n_labelled, seed=n_labelled)
    parts = summaries_of(results, random_assignment(results, 4, seed=n_labelled), n_boot=20, labels_part=labels)
    merged = merge_summaries(parts)
    assert merged.label_figures == {"mean score", "share good", "share partial", "share poor",
                                    "mean answer_faithfulness"}

    judge = segments.set_index("segment_id").loc[labels["segment_id"], "band"].to_numpy()
    for weights in (None, "linear", "quadratic"):
        assert kappa_from_summary(merged, weights) == pytest.approx(
            cohen_kappa_score(judge, labels["band"], labels=list(BANDS), weights=weights), abs=1e-12)
    confusion = confusion_from_summary(merged)
    assert int(confusion.to_numpy().sum()) == n_labelled
    assert confusion.loc["poor", "partial"] == int(((judge == "poor") & (labels["band"] == "partial")).sum())

    by_id = segments.set_index("segment_id", drop=False)
    is_labelled = by_id.index.isin(labels["segment_id"])
    for figure in ("mean score", "share good", "share poor", "mean answer_faithfulness"):
        y = figure_values(labels.set_index("segment_id", drop=False), figure)
        yhat = figure_values(by_id.loc[labels["segment_id"]], figure)
        every = figure_values(by_id, figure)
        pair = np.isfinite(y) & np.isfinite(yhat)
        expected = ppi_mean(y[pair], yhat[pair], every[np.isfinite(every) & ~is_labelled])
        got = ppi_from_summary(merged, figure)
        for attr in ("estimate", "lo", "hi", "se", "lam"):
            assert getattr(got, attr) == pytest.approx(getattr(expected, attr), abs=1e-9), (figure, attr)
        assert (got.n_labelled, got.n_unlabelled, got.df) == (expected.n_labelled, expected.n_unlabelled, expected.df)
    assert ppi_from_summary(merged, "mean score").rule.tune_lam == (n_labelled >= 50)
    with pytest.raises(ValueError, match="carry no value"):
        ppi_from_summary(merged, "share capped")


def test_labels_outside_the_part_are_ignored_and_verdict_is_read_as_band():
    results = _frame("bundled")
    segments = headline_segments(results)
    labels = human_labels(segments, 30, seed=1).rename(columns={"band": "verdict"})
    parts = summaries_of(results, random_assignment(results, 3, seed=3), n_boot=10, labels_part=labels)
    assert sum(int(p.confusion.sum()) for p in parts) == 30
    merged = merge_summaries(parts)
    whole = partition_summary(results, n_boot=10, labels_part=labels)
    assert merged == whole
    unlabelled = merge_summaries([partition_summary(results, n_boot=10)])
    assert unlabelled.label_figures is None and int(unlabelled.ppi_counts[0, 1]) == len(segments)
    with pytest.raises(ValueError, match="duplicated"):
        partition_summary(results, labels_part=pd.concat([labels, labels.iloc[:1]]))
