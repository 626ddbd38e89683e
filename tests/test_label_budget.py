"""Label budgets (study 11): the designs, the inverse-probability-weighted PPI++ estimator, the planner,
the labelling packs of the three designs, and their readers.

Oracles written here: the Neyman allocation and the active design's probabilities by hand; every sample
of the randomised systematic design enumerated (every random order x every start), for the inclusion
probabilities and the estimator's unbiasedness, one batch and two (the second batch's probabilities
fitted on the first's labels); ppi_py's point estimates (equal probabilities, and a stratified design
whose weights add up to N); the estimator's variance written out from its formula; the Broska-Howes-van
Loon effective n of ppi_py's power analysis for the planner; and seeded simulations of the draw at the
planned n.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from scipy.stats import chi2, norm, t

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.cli import main
from axon_eval.rubric import DIMENSIONS
from axon_eval.stats import label_budget as lb
from axon_eval.stats import label_budget_sim as sim

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LABELS = ROOT / "data" / "turns" / "labels.csv"


# -- the designs by hand ---------------------------------------------------------------------------------------
def test_neyman_allocation_by_hand():
    # N_h S_h = 600 x 10 = 6,000 and 400 x 30 = 12,000: a third and two thirds of 90
    assert lb.neyman_allocation([600, 400], [10, 30], 90).tolist() == [30, 60]
    # equal SDs: proportional, 50 x 600/1000 and 50 x 400/1000
    assert lb.neyman_allocation([600, 400], [7, 7], 50).tolist() == [30, 20]
    # quotas 8.8 and 2.2 round to 9 and 2 (largest remainders)
    assert lb.neyman_allocation([100, 50], [2, 1], 11).tolist() == [9, 2]
    # quota 0.0001 lifted to the minimum of 2; the other gets the rest
    assert lb.neyman_allocation([1000, 10], [1, 0.01], 10).tolist() == [8, 2]
    # a stratum's quota above its size (16.7 > 5) is capped and the excess goes to the other
    assert lb.neyman_allocation([5, 1000], [100, 1], 50).tolist() == [5, 45]
    with pytest.raises(ValueError, match="minimum"):
        lb.neyman_allocation([10, 10, 10], [1, 1, 1], 5)


def test_active_probabilities_by_hand():
    # signal 0, 1, 3: mean 4/3, floor 0.1 x 4/3; intensities 0.5 + 0.5 s~ / mean(s~); pi = 1 x intensity / 3
    s = np.array([0.0, 1.0, 3.0])
    floored = np.array([0.4 / 3, 1.0, 3.0])
    expected = (0.5 + 0.5 * floored / floored.mean()) / 3
    assert np.allclose(lb.active_probabilities(s, 1), expected, atol=1e-12)
    # one segment's probability above 1 is capped, its excess spread over the others in proportion
    assert np.allclose(lb.active_probabilities([0, 0, 0, 10.0], 2), [1 / 3, 1 / 3, 1 / 3, 1.0])
    # a constant signal is uniform sampling
    assert np.allclose(lb.active_probabilities(np.full(7, 3.2), 3), 3 / 7)
    # a missing signal counts as the mean
    assert np.allclose(lb.active_probabilities([np.nan, 2.0, 2.0], 1), 1 / 3)
    assert lb.useless_signal_inflation([0.5, 0.5]) == pytest.approx(1.0)
    assert lb.useless_signal_inflation([0.25, 0.75]) == pytest.approx(0.5 * (4 + 4 / 3) / 2)
    # whatever the signal, 1/pi <= N / (MIX_UNIFORM n)
    pi = lb.active_probabilities(np.r_[np.zeros(999), 1e6], 10)
    assert (1 / pi).max() <= 1000 / (lb.MIX_UNIFORM * 10) + 1e-9


def test_batch_weights_by_hand():
    # batch 1 (n = 2): pi 0.5 each, drew 0 and 1; batch 2 (n = 2): pi 0.8, 0.4, 0.4, 0.4, drew 0 and 2
    w = lb.batch_weights([np.full(4, 0.5), np.array([0.8, 0.4, 0.4, 0.4])],
                         [np.array([1, 1, 0, 0], bool), np.array([1, 0, 1, 0], bool)])
    assert np.allclose(w, [0.5 / 0.5 + 0.5 / 0.8, 0.5 / 0.5, 0.5 / 0.4, 0.0])


def test_error_model_by_hand():
    # cells a (residuals 1, 3) and b (residual 2); overall mean square (1 + 9 + 4) / 3; shrink 5 pseudo-labels
    overall = 14 / 3
    sig = lb.error_model(["a", "b", "c"], ["a", "a", "b"], [1.0, -3.0, 2.0], min_labels=1)
    assert sig[0] == pytest.approx(math.sqrt((10 + 5 * overall) / (2 + 5)))
    assert sig[1] == pytest.approx(math.sqrt((4 + 5 * overall) / (1 + 5)))
    assert sig[2] == pytest.approx(math.sqrt(overall))  # a cell without labels: the overall one
    assert (lb.error_model(["a", "b"], ["a"], [1.0]) == 1).all()  # fewer than MIN_MODEL_LABELS: flat


# -- the draw, enumerated ---------------------------------------------------------------------------------------
def enumerate_systematic(pi: np.ndarray) -> dict[frozenset, float]:
    """Every sample of randomised systematic sampling with probabilities ``pi`` and its probability: every
    order of the segments (equally likely) x every interval of the start u in [0, 1) between breakpoints."""
    n_seg = len(pi)
    out: dict[frozenset, float] = defaultdict(float)
    for perm in itertools.permutations(range(n_seg)):
        cum = np.cumsum(pi[list(perm)])
        breaks = sorted({0.0, 1.0, *(round(c % 1, 12) for c in cum)})
        for a, b in itertools.pairwise(breaks):
            u = (a + b) / 2
            chosen = frozenset(perm[k] for k in range(n_seg)
                               if math.floor(cum[k] - u) > math.floor((cum[k - 1] if k else 0.0) - u))
            out[chosen] += (b - a) / math.factorial(n_seg)
    return dict(out)


@pytest.fixture(scope="module")
def tiny():
    y = np.array([62.0, 80.0, 35.0, 91.0, 55.0])
    yhat = np.array([70.0, 78.0, 50.0, 95.0, 52.0])
    signal = np.array([0.5, 1.0, 4.0, 0.2, 2.0])
    return y, yhat, signal


def test_systematic_sample_has_the_stated_probabilities(tiny):
    _, _, signal = tiny
    pi = lb.active_probabilities(signal, 2)
    design = enumerate_systematic(pi)
    assert sum(design.values()) == pytest.approx(1.0)
    assert all(len(s) == 2 for s in design)
    incl = np.zeros(5)
    for s, p in design.items():
        incl[list(s)] += p
    assert np.allclose(incl, pi, atol=1e-12)
    # the sampler draws the enumerated samples at their probabilities (20,000 draws, 4 standard errors)
    draws = lb.systematic_sample(pi, np.random.default_rng(3), size=20_000)
    counts = defaultdict(int)
    for row in draws:
        counts[frozenset(np.flatnonzero(row).tolist())] += 1
    assert set(counts) <= set(design)
    for s, p in design.items():
        assert abs(counts[s] / 20_000 - p) <= 4 * math.sqrt(p * (1 - p) / 20_000) + 1e-9, (sorted(s), p)
    # a stratified draw takes exactly n_h from each stratum
    strata = np.array([0, 0, 0, 1, 1, 1, 1])
    pi_s = np.array([2 / 3] * 3 + [0.25] * 4)
    for row in lb.systematic_sample(pi_s, np.random.default_rng(1), strata=strata, size=200):
        assert row[:3].sum() == 2 and row[3:].sum() == 1


def test_inverse_probability_weighting_is_unbiased_by_enumeration(tiny):
    y, yhat, signal = tiny
    pi = lb.active_probabilities(signal, 2)
    for lam in (0.0, 0.7, 1.0):
        mean_est = sum(p * lb.ht_ppi(y[sorted(s)], yhat[sorted(s)], pi[sorted(s)], yhat, lam=lam).estimate
                       for s, p in enumerate_systematic(pi).items())
        assert mean_est == pytest.approx(y.mean(), abs=1e-9), lam


def test_batch_sequential_is_unbiased_by_enumeration(tiny):
    """Batch 1 uniform (2 of 5); batch 2 (2 draws over all 5) with probabilities from a model fitted on
    batch 1's labels: every pair of samples enumerated, the two-batch estimate averages to the truth."""
    y, yhat, _ = tiny
    cells = np.array(["a", "a", "b", "b", "b"])
    pi1 = np.full(5, 0.4)
    total = 0.0
    for s1, p1 in enumerate_systematic(pi1).items():
        s1 = sorted(s1)
        sig = lb.error_model(cells, cells[s1], y[s1] - yhat[s1], min_labels=1)
        pi2 = lb.active_probabilities(sig, 2)
        for s2, p2 in enumerate_systematic(pi2).items():
            s2 = sorted(s2)
            idx = s1 + s2
            est = lb.ht_ppi(y[idx], yhat[idx], np.r_[pi1[s1], pi2[s2]], yhat, lam=1.0, batches=[2, 2]).estimate
            total += p1 * p2 * est
    assert total == pytest.approx(y.mean(), abs=1e-9)


# -- the estimator against ppi_py and its formula -------------------------------------------------------------------
def _population(n_seg: int = 3000, seed: int = 5):
    rng = np.random.default_rng(seed)
    yhat = 70 + 18 * rng.standard_normal(n_seg)
    y = yhat - 2 + np.where(rng.random(n_seg) < 0.2, 12, 3) * rng.standard_normal(n_seg)
    return y, yhat, np.abs(y - yhat) + rng.random(n_seg)


def _se_by_formula(y, yhat, pi, yhat_all, lam, ddof):
    """The module docstring's variance, written out: var^(Y)/N + (1 - n/N) var(u)/n."""
    n, big_n = len(y), len(yhat_all)
    w = 1 / pi
    wm = lambda x: np.sum(w * x) / np.sum(w)
    var_w = lambda x: wm((x - wm(x)) ** 2)
    var_y = max(var_w(y) + lam ** 2 * (np.var(yhat_all) - var_w(yhat)), 0.0)
    u = n * (y - lam * yhat) / (big_n * pi)
    return math.sqrt(var_y / big_n + (1 - n / big_n) * np.sum((u - u.mean()) ** 2) / (n - ddof) / n)


@pytest.mark.parametrize("n", [30, 120])
def test_constant_signal_is_uniform_ppi_and_ppi_py(n):
    y, yhat, _ = _population()
    pi = lb.active_probabilities(np.full(len(y), 2.5), n)
    assert np.allclose(pi, n / len(y))
    idx = np.flatnonzero(lb.systematic_sample(pi, np.random.default_rng(n)))
    active = lb.ht_ppi(y[idx], yhat[idx], pi[idx], yhat)
    uniform = lb.uniform_ppi(y[idx], yhat[idx], yhat)
    assert (active.estimate, active.se, active.lo, active.hi, active.lam) == pytest.approx(
        (uniform.estimate, uniform.se, uniform.lo, uniform.hi, uniform.lam), abs=1e-12)
    # the point estimate is ppi_py's with the imputed term over every judged segment, at the same lam
    ref = ppi_py.ppi_mean_pointestimate(y[idx], yhat[idx], yhat, lam=active.lam)
    assert active.estimate == pytest.approx(float(np.ravel(ref)[0]), abs=1e-9)
    # below 50 labels lam = 1 and a Student-t interval with n - 1 df; from 50, tuned and normal
    if n < 50:
        assert active.lam == 1.0 and active.df == pytest.approx(n - 1)
        q = t.ppf(0.975, n - 1)
    else:
        assert active.df is None
        q = norm.ppf(0.975)
    se = _se_by_formula(y[idx], yhat[idx], pi[idx], yhat, active.lam, 1 if n < 50 else 0)
    assert active.se == pytest.approx(se, rel=1e-12)
    assert active.hi - active.estimate == pytest.approx(q * se, rel=1e-12)


def test_unequal_probabilities_follow_the_formula_and_tuned_lam_minimises_it():
    y, yhat, signal = _population()
    pi = lb.active_probabilities(signal, 150)
    idx = np.flatnonzero(lb.systematic_sample(pi, np.random.default_rng(2)))
    res = lb.ht_ppi(y[idx], yhat[idx], pi[idx], yhat)
    # the paper's point estimate (Zrnic & Candes 2024): lam mean_all(Yhat) + (1/N) sum (Y - lam Yhat) / pi
    theta = res.lam * yhat.mean() + np.sum((y[idx] - res.lam * yhat[idx]) / pi[idx]) / len(y)
    assert res.estimate == pytest.approx(theta, abs=1e-9)
    assert res.se == pytest.approx(_se_by_formula(y[idx], yhat[idx], pi[idx], yhat, res.lam, 0), rel=1e-12)
    grid = np.linspace(0, 1, 401)
    ses = [_se_by_formula(y[idx], yhat[idx], pi[idx], yhat, lam, 0) for lam in grid]
    assert abs(res.lam - grid[int(np.argmin(ses))]) <= 0.0026 and res.se <= min(ses) + 1e-12


def test_stratified_ppi_matches_ppi_py_and_the_stratified_variance():
    y, yhat, _ = _population()
    strata = np.where(yhat >= 80, "good", np.where(yhat >= 50, "partial", "poor"))
    names, codes = np.unique(strata, return_inverse=True)
    pop = np.bincount(codes)
    alloc = lb.neyman_allocation(pop, [5, 6, 9], 40)
    pi = lb.stratified_probabilities(strata, dict(zip(names, alloc.tolist(), strict=True)))
    idx = np.flatnonzero(lb.systematic_sample(pi, np.random.default_rng(4), strata=strata))
    res = lb.stratified_ppi(y[idx], yhat[idx], strata[idx], yhat, strata)
    assert res.lam == 1.0  # fewer than 50 labels in a stratum (and in all: Student-t, Satterthwaite df)
    # the weights N_h / n_h add up to N: the Hajek mean ppi_py takes with w is the Horvitz-Thompson one
    ref = ppi_py.ppi_mean_pointestimate(y[idx], yhat[idx], yhat, lam=1.0, w=1 / pi[idx])
    assert res.estimate == pytest.approx(float(np.ravel(ref)[0]), abs=1e-9)
    # the stratified variance written out: var^(Y)/N + sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h
    r = y[idx] - yhat[idx]
    w = 1 / pi[idx]
    wm = lambda x: np.sum(w * x) / np.sum(w)
    var_y = wm((y[idx] - wm(y[idx])) ** 2) + np.var(yhat) - wm((yhat[idx] - wm(yhat[idx])) ** 2)
    terms = [(pop[h] / len(y)) ** 2 * (1 - alloc[h] / pop[h]) * np.var(r[codes[idx] == h], ddof=1) / alloc[h]
             for h in range(3)]
    assert res.se == pytest.approx(math.sqrt(var_y / len(y) + sum(terms)), rel=1e-10)
    df = sum(terms) ** 2 / sum(c ** 2 / (alloc[h] - 1) for h, c in enumerate(terms))
    assert res.df == pytest.approx(df, rel=1e-10)


# -- the planner ----------------------------------------------------------------------------------------------------
def test_planner_under_a_stated_correlation_is_the_effective_n_of_ppi_py_power_analysis():
    rng = np.random.default_rng(0)
    big_n, rho = 5000, 0.6
    yhat = 70 + 18 * rng.standard_normal(big_n)
    plan = lb.plan_labels(yhat, target_half_width=2.0, correlation=rho, designs=("uniform",))
    d = plan.design("uniform")
    n, s2 = d.n, yhat.var()
    assert n >= 50 and d.lam == pytest.approx(rho)
    # Broska, Howes & van Loon: var = var(Y) / effective_n, effective_n = n (n + N_u) / (n + (1 - rho^2) N_u)
    n_u = big_n - n
    eff = n * (n + n_u) / (n + (1 - rho ** 2) * n_u)
    assert d.expected_half_width == pytest.approx(norm.ppf(0.975) * math.sqrt(s2 / eff), rel=1e-9)
    # assured: both terms estimated from the labels, their sum at its 90% chi-square quantile with
    # Satterthwaite's df (the run's term on k - 1 df, the draw's on k - 2: normal terms, lam fitted)
    def assured(k):
        a, rect = s2 / big_n, (1 - k / big_n) * s2 * (1 - rho ** 2) / k
        d = (a + rect) ** 2 / (a ** 2 / (k - 1) + rect ** 2 / (k - 2))
        return norm.ppf(0.975) * math.sqrt((a + rect) * chi2.ppf(0.9, d) / d)

    assert d.half_width == pytest.approx(assured(n), rel=1e-9)
    assert assured(n) <= 2.0 < assured(n - 1)  # the smallest such n


def _normal_population(reps: int, seed: int, rho: float = 0.8, n_seg: int = 3000) -> sim.Population:
    rng = np.random.default_rng(seed)
    yhat = 70 + 18 * rng.standard_normal((reps, n_seg))
    y = 70 + rho * (yhat - 70) + 18 * math.sqrt(1 - rho ** 2) * rng.standard_normal((reps, n_seg))
    codes, names = sim._band_codes(yhat)
    return sim.Population("normal", yhat, y, codes, names, 70.0, {"noise": rng.random((reps, n_seg))}, True)


def _exact_run(seed: int, rho: float, n_seg: int = 3000) -> sim.Population:
    """One run whose labels follow the stated-correlation model exactly: the human scores' spread equals the
    judge's, their correlation is ``rho``, the errors are normal, uncorrelated with the judge and equally
    spread in every band (the noise is residualised on the judge score and the bands and standardised)."""
    rng = np.random.default_rng(seed)
    yhat = 70 + 18 * rng.standard_normal(n_seg)
    codes, names = sim._band_codes(yhat)
    design = np.column_stack([yhat, codes == 0, codes == 1, codes == 2]).astype(float)
    e = rng.standard_normal(n_seg)
    e = e - design @ np.linalg.lstsq(design, e, rcond=None)[0]
    for h in range(3):
        e[codes == h] /= e[codes == h].std()
    y = yhat.mean() + rho * (yhat - yhat.mean()) + yhat.std() * math.sqrt(1 - rho ** 2) * e
    return sim.Population("exact", yhat[None], y[None], codes[None], names, float(y.mean()),
                          {"noise": rng.random((1, n_seg))}, True)


@pytest.mark.slow
@pytest.mark.parametrize(("rho", "target"), [(0.8, 2.0), (0.5, 2.5)])
def test_planned_n_reaches_the_target_in_90_percent_of_replications(rho, target):
    """SIMULATED: a run whose labels follow the model the planner assumes under a stated correlation; each
    design's labels drawn at its planned n in 4,000 seeded replications of the draw on that run: the
    half-width must reach the target in at least 90% of them (the planner's assurance)."""
    run = _exact_run(17, rho)
    strata = np.asarray(run.strata_names, dtype=object)[run.strata[0]]
    plan = lb.plan_labels(run.yhat[0], target_half_width=target, correlation=rho, strata_all=strata,
                          signal=run.signals["noise"][0])
    draws = run.rows(np.zeros(4000, dtype=int))
    # the strata's SDs of label - judge under the model (lam = 1 with fewer than 50 labels a stratum)
    yh, codes = run.yhat[0], run.strata[0]
    sd = [math.sqrt((rho - 1) ** 2 * yh[codes == h].var() + yh.var() * (1 - rho ** 2)) for h in range(3)]
    for d in plan.designs:
        assert d.n is not None and d.n < run.shape[1]
        out = sim.simulate_design(draws, d.design, d.n, seed=1, signal="noise" if d.design == "active" else None,
                                  strata_sd=sd)
        if d.design == "stratified":
            assert list(d.allocation.values()) == lb.neyman_allocation(np.bincount(codes), sd, d.n).tolist()
        reached = float((out["half_width"] <= target).mean())
        assert reached >= lb.ASSURANCE, (d.design, d.n, reached)
        # the planner's expected half-width is the mean one, within 3%
        assert float(out["half_width"].mean()) == pytest.approx(d.expected_half_width, rel=0.03), d.design


@pytest.mark.slow
def test_plans_from_pilots_and_coverage_on_fresh_runs():
    """SIMULATED: in each of 200 fresh runs of the normal model a pilot of 100 uniform labels is drawn, the plan
    made from it, and the labels drawn afresh at the planned n: the pilot's own uncertainty is inside the
    assurance, so about 90% reach the target (200 replications: a standard error of 2 points), and the
    intervals cover the model's mean 93-97% of the time."""
    pop = _normal_population(200, 11)
    check = sim.plan_check(pop, 2.0, seed=3, signal="noise", n_pilot=100, n_plans=200)
    for r in check.itertuples():
        assert r.share_reaching_target >= lb.ASSURANCE - 0.03, (r.design, r.share_reaching_target)
        assert 0.93 <= r.coverage <= 0.975, (r.design, r.coverage)


@pytest.mark.slow
def test_active_design_coverage_and_gain_in_the_simulated_population():
    pop = sim.simulated_population(2000, 0, correlations=(0.0, 0.6))
    uni = sim.simulate_design(pop, "uniform", 60, seed=0)
    good = sim.simulate_design(pop, "active", 60, seed=0, signal="rho=0.6")
    useless = sim.simulate_design(pop, "active", 60, seed=0, signal="rho=0")
    for out in (uni, good, useless):
        assert 0.93 <= out["covered"].mean() <= 0.97
        assert abs(out["estimate"].mean() - pop.truth) < 4 * out["estimate"].std() / math.sqrt(2000)
    assert good["half_width"].mean() < 0.9 * uni["half_width"].mean()
    assert useless["half_width"].mean() <= 1.10 * uni["half_width"].mean()


def test_detect_half_width():
    # z delta / (z + z_power): 1.96 x 3 / (1.96 + 0.8416)
    assert lb.detect_half_width(3.0) == pytest.approx(norm.ppf(0.975) * 3 / (norm.ppf(0.975) + norm.ppf(0.8)))


# -- the labelling pack of each design --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="budget", progress=False, cache=False)


@pytest.mark.parametrize("design", ["uniform", "stratified", "active"])
def test_design_packs_record_inclusion_probabilities(run, design, tmp_path):
    signal = labelling.load_signal("column:n_steps", run) if design == "active" else None
    sample = labelling.draw_design_sample(run, design, 20, signal=signal, seed=3)
    out = labelling.write_labelling_pack(sample, run, tmp_path / "pack")
    d = json.loads((out / "design.json").read_text())
    probs = pd.read_csv(out / "probabilities.csv")
    judged = run.results[run.results["status"] == "judged"]["segment_id"].nunique()
    assert len(probs) == judged and probs["inclusion_probability"].sum() == pytest.approx(20)
    assert d["design"] == design and len(d["segments"]) == 20 and d["batches"][0]["seed"] == 3
    by_id = probs.set_index("segment_id")["inclusion_probability"]
    for seg in d["segments"]:
        assert seg["inclusion_probability"] == pytest.approx(by_id[seg["segment_id"]])
        assert seg["weight"] == pytest.approx(1 / by_id[seg["segment_id"]])
    if design == "uniform":
        assert np.allclose(probs["inclusion_probability"], 20 / judged)
    with (out / "sheet.csv").open() as fh:
        rows = list(csv.reader(fh))
    # the rater's sheet has the rater's columns only: the probabilities are in design.json
    assert rows[0] == list(labelling.SHEET_COLUMNS) and [r[0] for r in rows[1:]] == sorted(by_id[by_id > 0].index.intersection(
        [s["segment_id"] for s in d["segments"]]))
    assert all(v == "" for r in rows[1:] for v in r[1:])


def _fill(sheet: Path, labels: pd.DataFrame) -> None:
    """Fill a sheet from the constructed labels' midpoints (a stand-in rater), keeping its extra columns."""
    lab = labels.set_index("segment_id")
    with sheet.open() as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    for r in rows[1:]:
        seg = lab.loc[r[0]]
        for d in DIMENSIONS:
            lo = seg[f"{d}_min"]
            r[header.index(d)] = "" if pd.isna(lo) else str(int((lo + seg[f"{d}_max"]) // 2))
        r[header.index("verdict")], r[header.index("rater")] = seg["verdict"], "r1"
    with sheet.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def test_batch_sequential_pack_through_the_cli(run, tmp_path, capsys):
    from axon_eval.calibration.corrected import run_labels
    from axon_eval.labels import load_labels

    constructed = load_labels(LABELS)
    pack = tmp_path / "pack"
    assert main(["sample-for-labelling", str(run.run_dir), "--design", "active", "--budget", "12", "--signal", "model",
                 "--seed", "1", "--out", str(pack)]) == 0
    assert "needs labels: none yet" in capsys.readouterr().out
    _fill(pack / "sheet.csv", constructed)
    assert main(["import-labels", str(pack / "sheet.csv")]) == 0
    first = pd.read_csv(pack / "sheet.imported.csv")
    assert first["inclusion_probability"].notna().all() and len(first) == 12
    assert main(["sample-for-labelling", str(run.run_dir), "--design", "active", "--budget", "12", "--signal", "model",
                 "--seed", "2", "--next-batch", str(pack)]) == 0
    design = json.loads((pack / "design.json").read_text())
    assert [b["batch"] for b in design["batches"]] == [1, 2] and design["batches"][1]["signal"] == "model"
    assert "per judge band over 12 labels" in design["batches"][1]["signal_note"]
    new = design["batches"][1]["new_segments"]
    with (pack / "sheet-2.csv").open() as fh:
        assert [r[0] for r in list(csv.reader(fh))[1:]] == new
    # every segment's weight counts both batches: sum_b (n_b / n) / pi_b over the batches that drew it
    probs = pd.read_csv(pack / "probabilities.csv").pivot(index="segment_id", columns="batch",
                                                          values="inclusion_probability")
    assert np.allclose(probs.sum(), [12, 12])
    for seg in design["segments"]:
        drawn = [int(b) for b in seg["probabilities"]]
        w = sum(0.5 / probs.loc[seg["segment_id"], b] for b in drawn)
        assert seg["weight"] == pytest.approx(w) and seg["stratum"] == "batches"
    _fill(pack / "sheet-2.csv", constructed)
    assert main(["import-labels", str(pack / "sheet-2.csv")]) == 0
    merged = pd.read_csv(pack / "sheet.imported.csv")
    assert len(merged) == 12 + len(new) and set(merged["segment_id"]) == {s["segment_id"] for s in design["segments"]}
    assert main(["import-labels", str(pack / "sheet-2.csv")]) == 0  # importing again replaces, never doubles
    assert len(pd.read_csv(pack / "sheet.imported.csv")) == 12 + len(new)
    # study 09's reader takes the pack's weights
    labels = run_labels(run, pack)
    assert labels.design is not None
    assert dict(zip(labels.design["segment_id"], labels.design["weight"], strict=True)) == pytest.approx(
        {s["segment_id"]: s["weight"] for s in design["segments"]})
    # the imported file alone (no design.json beside it) still carries 1/pi
    alone = tmp_path / "alone"
    alone.mkdir()
    first.to_csv(alone / "labels.csv", index=False)
    lone = run_labels(run, alone / "labels.csv")
    assert lone.design is not None and np.allclose(lone.design["weight"], 1 / first.groupby("segment_id")[
        "inclusion_probability"].first().reindex(lone.design["segment_id"]).to_numpy())


def test_stratified_pack_uses_neyman_allocation_from_the_labels_so_far(run):
    from axon_eval.labels import load_labels

    constructed = labelling.labels_from_constructed(load_labels(LABELS))
    pilot = labelling.pilot_residuals(run, constructed)
    sample = labelling.draw_design_sample(run, "stratified", 30, pilot=pilot, seed=0)
    strata = {s["stratum"]: s for s in sample.design()["strata"]}
    pop = [strata[h]["population"] for h in sorted(strata)]
    sd = [strata[h]["sd"] for h in sorted(strata)]
    assert [strata[h]["allocated"] for h in sorted(strata)] == lb.neyman_allocation(pop, sd, 30).tolist()
    res = pilot.merge(labelling.judged_segments(run)[["segment_id", "band"]], on="segment_id")
    for h in strata:
        assert strata[h]["sd"] == pytest.approx(res.loc[res["band"] == h, "residual"].std(ddof=1))


def test_unknown_inclusion_probabilities_are_read_as_uniform_and_said(run):
    pilot = labelling.read_pilot(run, LABELS)
    assert pilot.weights is None and any("simple random sample" in n for n in pilot.notes)


# -- plan-labels -----------------------------------------------------------------------------------------------------
def test_plan_labels_cli(run, capsys):
    assert main(["plan-labels", str(run.run_dir), "--figure", "mean_score", "--half-width", "6", "--correlation", "0.9"]) == 0
    out = capsys.readouterr().out
    for design in ("labels only", "uniform", "stratified", "active"):
        assert design in out
    assert "90% assurance" in out and "stated judge-human correlation 0.9" in out
    assert main(["plan-labels", str(run.run_dir), "--figure", "share_poor", "--half-width", "0.15", "--labels",
                 str(LABELS), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    plan = next(iter(record["plans"].values()))
    assert plan["figure"] == "share poor" and plan["kind"] == "share" and plan["pilot_labels"] == 97
    assert set(plan["designs"]) == {"labels only", "uniform", "stratified", "active"}
    # two runs: the same segments, so paired; the target is the detectable difference's half-width
    assert main(["plan-labels", str(run.run_dir), str(run.run_dir), "--detect-difference", "3", "--correlation", "0.5",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mode"] == "paired" and record["target_half_width"] == pytest.approx(lb.detect_half_width(3.0))
    # paired with a pilot: both runs' labels of the same pairs (the floor on labelled pairs is read on the way)
    assert main(["plan-labels", str(run.run_dir), str(run.run_dir), "--detect-difference", "3", "--labels",
                 str(LABELS), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mode"] == "paired" and record["target_half_width"] == pytest.approx(lb.detect_half_width(3.0))
    assert main(["plan-labels", str(run.run_dir), "--half-width", "2"]) == 2  # neither labels nor a correlation
    assert "--labels" in capsys.readouterr().err
    assert main(["plan-labels", str(run.run_dir), "--figure", "share_purple", "--half-width", "0.1",
                 "--correlation", "0.5"]) == 2


# -- compare uses the weights ----------------------------------------------------------------------------------------
def test_corrected_difference_applies_design_weights():
    from axon_eval.stats.difference import independent_difference
    from axon_eval.stats.ppi import ppi_mean

    rng = np.random.default_rng(9)
    ja, jb = 60 + 10 * rng.standard_normal(400), 63 + 10 * rng.standard_normal(400)
    ha, hb = ja - 1 + 3 * rng.standard_normal(400), jb - 1 + 3 * rng.standard_normal(400)
    wa = np.where(np.arange(400) % 2 == 0, 4.0, 8.0)
    lab_a = np.zeros(400, bool)
    lab_a[rng.choice(400, 60, replace=False)] = True
    lab_b = np.zeros(400, bool)
    lab_b[rng.choice(400, 60, replace=False)] = True
    rec = independent_difference(ja, np.where(lab_a, ha, np.nan), jb, np.where(lab_b, hb, np.nan), weights_a=wa)
    fit_a = ppi_mean(ha[lab_a], ja[lab_a], ja, w=wa[lab_a])  # weighted: the imputed term over every unit
    fit_b = ppi_mean(hb[lab_b], jb[lab_b], jb[~lab_b])
    assert rec.corrected.estimate == pytest.approx(fit_b.estimate - fit_a.estimate, abs=1e-12)
    half = math.hypot(fit_a.hi - fit_a.estimate, fit_b.hi - fit_b.estimate)
    assert rec.corrected.hi - rec.corrected.estimate == pytest.approx(half, rel=1e-12)


# -- the bench --------------------------------------------------------------------------------------------------------
def test_bench_quick_rows():
    from axon_eval.bench.label_budget import bench_label_budget
    from axon_eval.bench.suite import EXTERNAL_SECTIONS

    assert EXTERNAL_SECTIONS["label_budget"] == ("axon_eval.bench.label_budget", "bench_label_budget")
    rows = bench_label_budget(quick=True)
    assert len(rows) == 3 and all(r["section"] == "label_budget" and r["simulated"] and r["value"] > 0 for r in rows)
    assert all("SIMULATED" in r["name"] for r in rows)


def test_next_batch_after_a_proportional_pack(run, tmp_path):
    """A pack drawn before designs were explicit (proportional stratified, weights N_h / n_h) takes a next
    batch: its segments count as batch 1 with pi = n_h / N_h."""
    legacy = labelling.sample_for_labelling(run, 20, ("band",), seed=1)
    pack = labelling.write_labelling_pack(legacy, run, tmp_path / "pack")
    previous = json.loads((pack / "design.json").read_text())
    assert all(s["inclusion_probability"] == pytest.approx(1 / s["weight"]) for s in previous["segments"])
    nxt = labelling.draw_design_sample(run, "uniform", 10, seed=4, previous=previous)
    sheet = labelling.append_batch(nxt, run, pack)
    d = json.loads((pack / "design.json").read_text())
    assert sheet.name == "sheet-2.csv" and [b["batch"] for b in d["batches"]] == [1, 2]
    n1 = len(previous["segments"])
    judged = run.results[run.results["status"] == "judged"]["segment_id"].nunique()
    old = {s["segment_id"]: s["weight"] for s in previous["segments"]}
    drawn2 = set(nxt.extra["drawn"])
    for seg in d["segments"]:
        w = (n1 / (n1 + 10)) * old.get(seg["segment_id"], 0.0) + (10 / (n1 + 10)) * (
            judged / 10 if seg["segment_id"] in drawn2 else 0.0)
        assert seg["weight"] == pytest.approx(w)
    assert main(["sample-for-labelling", str(run.run_dir), "--design", "stratified", "--budget", "12", "--out",
                 str(tmp_path / "strat")]) == 0
    strat = json.loads((tmp_path / "strat" / "design.json").read_text())
    assert strat["stratify"] == ["band"] and sum(s["allocated"] for s in strat["strata"]) == 12
    assert "proportional allocation" in strat["method"]
