"""SIMULATED coverage of the corrected estimates: a judge with a known bias, known truth, many replications.

:func:`ppi_coverage_simulation` draws, per replication, ``n_labelled + n_unlabelled`` segments whose
human score is ``Y ~ Normal(human_mean, human_sd)`` and whose judge score is
``Yhat = Y + bias + Normal(0, judge_sd)`` (the judge sees the same turn, adds a stated bias and its own
noise). The first ``n_labelled`` carry their human score. Three 95% intervals are formed for the human
mean ``human_mean`` (the truth):

* ``judge_only`` -- the mean of every judge score, normal interval: centred on ``human_mean + bias``,
  so its coverage of the truth collapses as the bias grows;
* ``labels_only`` -- the mean of the human labels (:func:`~axon_eval.stats.ppi.classical_mean`);
* ``ppi`` -- power-tuned PPI++ (:func:`~axon_eval.stats.ppi.ppi_kernel`, the kernel of
  :func:`~axon_eval.stats.ppi.ppi_mean`, vectorised over replications).

PPI is valid whatever the bias, so its coverage stays near 95%: with 1,000 replications the Monte Carlo
standard error of a coverage is ``sqrt(0.95 * 0.05 / 1000) = 0.7`` points, and 93-97% is about three of
them either side. Everything here is SIMULATED: the frame says so in a column and in ``attrs``.

:func:`small_sample_coverage` measures the intervals :func:`~axon_eval.stats.ppi.ppi_mean` and
:func:`~axon_eval.stats.ppi.classical_mean` publish (through :func:`~axon_eval.stats.ppi.ppi_batch`, the
same rule) at few labels, beside ppi_py's normal PPI++ interval, in four models:

* *simple random sample, mean*: ``n`` labelled of ``n + 2000`` segments, ``Y ~ Normal(60, 15)``,
  ``Yhat = Y + 2 + Normal(0, 8)``; the truth is 60;
* *simple random sample, share*: ``Y ~ Bernoulli(0.25)`` (a band indicator), the judge's indicator ``Y``
  flipped with probability 0.10 when ``Y = 1`` and 0.06 when ``Y = 0`` (judge share 0.27); the truth is
  0.25;
* *stratified, mean* / *share*: a run of 3,000 segments, ``Y ~ Normal(60, 15)``, ``Yhat = Y + 4 +
  0.4 (60 - Y) + Normal(0, 6)`` (a bias that depends on the turn); two strata by the judge's band
  (``Yhat < 50`` and the rest), ``k`` labels drawn without replacement from each, design weights
  ``N_h / k``, the imputed term over every segment; the truth is 60, or ``P(Y < 50) = Phi(-2/3)`` for the
  share ``1[Y < 50]`` (judge ``1[Yhat < 50]``).

Each cell has its own stream ``numpy.random.default_rng([seed, model, size])``, so a cell's figures do not
depend on which other cells are asked for. :data:`axon_eval.stats.ppi.SIMULATED_COVERAGE` records this
table at its defaults (``tests/test_ppi.py`` checks the record against a fresh run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .intervals import CONFIDENCE, SEED, z_value
from .ppi import SIMULATED_COVERAGE_DESIGNS, ppi_batch, ppi_kernel

#: The label every output of this module carries.
SIMULATED_LABEL = "SIMULATED: a judge with a stated bias against known truth (no real judge or label)"
#: Default biases of the judge, in score points (0-100 scale).
BIASES: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 5.0)
METHODS: tuple[str, ...] = ("judge_only", "labels_only", "ppi")
COVERAGE_COLUMNS: tuple[str, ...] = ("bias", "method", "coverage", "mean_width", "n_rep", "n_labelled",
                                     "n_unlabelled", "simulated")


def ppi_coverage_simulation(n_labelled: int = 200, n_unlabelled: int = 2000, biases: Sequence[float] = BIASES,
                            n_rep: int = 1000, seed: int | None = SEED, *, confidence: float = CONFIDENCE,
                            human_mean: float = 60.0, human_sd: float = 15.0, judge_sd: float = 8.0) -> pd.DataFrame:
    """Coverage of the truth and mean width of the judge-only, labels-only and PPI++ intervals.

    One row per (bias, method): ``coverage`` (share of ``n_rep`` replications whose interval contains
    ``human_mean``), ``mean_width`` (score points), ``n_rep``, ``n_labelled``, ``n_unlabelled`` and
    ``simulated`` (always True). ``attrs``: ``simulated``, ``label`` (:data:`SIMULATED_LABEL`),
    ``seed``, ``confidence`` and the model's parameters. One ``numpy.random.default_rng(seed)`` stream
    serves every bias in order, so a seed reproduces the whole table.
    """
    if n_labelled < 2 or n_unlabelled < 1 or n_rep < 1:
        raise ValueError(f"need n_labelled >= 2, n_unlabelled >= 1, n_rep >= 1; got {n_labelled}, "
                         f"{n_unlabelled}, {n_rep}")
    z = z_value(confidence)
    rng = np.random.default_rng(seed)
    total = n_labelled + n_unlabelled
    rows = []
    for bias in biases:
        y = rng.normal(human_mean, human_sd, size=(n_rep, total))
        yhat = y + float(bias) + rng.normal(0.0, judge_sd, size=(n_rep, total))
        y_lab, yhat_lab, yhat_unl = y[:, :n_labelled], yhat[:, :n_labelled], yhat[:, n_labelled:]
        judge_est, judge_se = yhat.mean(1), yhat.std(1) / np.sqrt(total)
        lab_est, lab_se, _ = ppi_kernel(y_lab, np.zeros_like(y_lab), np.zeros((n_rep, 0)), 0.0)
        ppi_est, ppi_se, _ = ppi_kernel(y_lab, yhat_lab, yhat_unl, None)
        for method, est, se in (("judge_only", judge_est, judge_se), ("labels_only", lab_est, lab_se),
                                ("ppi", ppi_est, ppi_se)):
            covered = np.abs(est - human_mean) <= z * se
            rows.append({"bias": float(bias), "method": method, "coverage": float(covered.mean()),
                         "mean_width": float((2 * z * se).mean()), "n_rep": n_rep, "n_labelled": n_labelled,
                         "n_unlabelled": n_unlabelled, "simulated": True})
    out = pd.DataFrame(rows, columns=list(COVERAGE_COLUMNS))
    out.attrs.update({"simulated": True, "label": SIMULATED_LABEL, "seed": seed, "confidence": confidence,
                      "human_mean": human_mean, "human_sd": human_sd, "judge_sd": judge_sd})
    return out


def format_coverage_table(table: pd.DataFrame) -> str:
    """The coverage table for ``make bench``: a SIMULATED header, then one line per bias with each
    method's coverage (percent) and mean width (points)."""
    a = table.attrs
    head = [a.get("label", SIMULATED_LABEL),
            f"  {int(table['n_rep'].iloc[0])} replications, {int(table['n_labelled'].iloc[0])} labelled + "
            f"{int(table['n_unlabelled'].iloc[0])} unlabelled segments, seed {a.get('seed')}; human scores "
            f"N({a.get('human_mean', 60):g}, {a.get('human_sd', 15):g}), judge = human + bias + "
            f"N(0, {a.get('judge_sd', 8):g}); coverage of the true human mean by "
            f"{100 * a.get('confidence', CONFIDENCE):.0f}% intervals",
            f"  {'bias':>6}  " + "  ".join(f"{m:>22}" for m in METHODS)]
    wide = table.pivot(index="bias", columns="method", values=["coverage", "mean_width"])
    for bias in wide.index:
        cells = [f"{100 * wide.loc[bias, ('coverage', m)]:5.1f}% (width {wide.loc[bias, ('mean_width', m)]:4.2f})"
                 for m in METHODS]
        head.append(f"  {bias:>6g}  " + "  ".join(f"{c:>22}" for c in cells))
    return "\n".join(head)


# -- small labelled samples -----------------------------------------------------------------------------
#: Labelled n of the simple-random-sample rows of :func:`small_sample_coverage`.
SMALL_SAMPLE_NS: tuple[int, ...] = (2, 5, 10, 20, 30, 50, 100, 200)
#: Labels per stratum of its stratified rows (two strata, so n = 2k).
PER_STRATUM_NS: tuple[int, ...] = (4, 10, 30)
#: Replications per cell of :func:`small_sample_coverage` (Monte Carlo se of a 95% coverage: 0.5 points).
SMALL_SAMPLE_REPS = 2000
#: Unlabelled segments of the simple-random-sample models.
SRS_UNLABELLED = 2000
#: Segments of a run in the stratified models.
STRATIFIED_RUN = 3000
#: The three intervals of the small-sample table -- what is published, and ppi_py's normal PPI++ interval.
SMALL_SAMPLE_METHODS: tuple[str, ...] = ("ppi", "labels_only", "ppi_py_normal")
SMALL_SAMPLE_COLUMNS: tuple[str, ...] = ("design", "kind", "n_labelled", "per_stratum", "method", "coverage",
                                         "mean_width", "mean_lam", "n_rep", "simulated")
_MODELS = {("srs", "mean"): 0, ("srs", "share"): 1, ("stratified", "mean"): 2, ("stratified", "share"): 3}


def _srs_draw(rng: np.random.Generator, kind: str, n: int, n_rep: int) -> tuple[np.ndarray, np.ndarray, float]:
    total = n + SRS_UNLABELLED
    if kind == "mean":
        y = rng.normal(60.0, 15.0, size=(n_rep, total))
        return y, y + 2.0 + rng.normal(0.0, 8.0, size=(n_rep, total)), 60.0
    y = (rng.random((n_rep, total)) < 0.25).astype(np.float64)
    flip = rng.random((n_rep, total)) < np.where(y == 1.0, 0.10, 0.06)
    return y, np.where(flip, 1.0 - y, y), 0.25


def _stratified_draw(rng: np.random.Generator, kind: str, k: int, n_rep: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """``(y_labelled, yhat_labelled, yhat_all, weights, truth)`` of ``n_rep`` runs, ``k`` labels per stratum."""
    y = rng.normal(60.0, 15.0, size=(n_rep, STRATIFIED_RUN))
    yhat = y + 4.0 + 0.4 * (60.0 - y) + rng.normal(0.0, 6.0, size=(n_rep, STRATIFIED_RUN))
    keys = rng.random((n_rep, STRATIFIED_RUN))
    poor = yhat < 50.0
    picks, weights = [], []
    for stratum in (poor, ~poor):
        sizes = stratum.sum(1)
        if (sizes < k).any():
            raise ValueError(f"a simulated stratum holds {int(sizes.min())} segments, fewer than k = {k}")
        order = np.argsort(np.where(stratum, keys, np.inf), axis=1)[:, :k]
        picks.append(order)
        weights.append(np.repeat((sizes / k)[:, None], k, axis=1))
    idx, w = np.concatenate(picks, axis=1), np.concatenate(weights, axis=1)
    if kind == "share":
        y, yhat, truth = (y < 50.0).astype(np.float64), (yhat < 50.0).astype(np.float64), \
            0.5 * math.erfc((2.0 / 3.0) / math.sqrt(2.0))
    else:
        truth = 60.0
    rows = np.arange(n_rep)[:, None]
    return y[rows, idx], yhat[rows, idx], yhat, w, truth


def small_sample_coverage(ns: Sequence[int] = SMALL_SAMPLE_NS, per_stratum: Sequence[int] = PER_STRATUM_NS,
                          n_rep: int = SMALL_SAMPLE_REPS, seed: int = SEED, *,
                          confidence: float = CONFIDENCE) -> pd.DataFrame:
    """SIMULATED coverage of the published PPI and labels-only intervals at few labels, and of ppi_py's
    normal PPI++ interval, in the four models of the module docstring.

    One row per (design, kind, size, method): ``design`` (a key of
    :data:`~axon_eval.stats.ppi.SIMULATED_COVERAGE_DESIGNS`), ``kind`` (``mean``/``share``), ``n_labelled``,
    ``per_stratum`` (stratified rows; else 0), ``method`` (:data:`SMALL_SAMPLE_METHODS`), ``coverage`` (share
    of ``n_rep`` replications whose interval holds the truth), ``mean_width`` (score points or share),
    ``mean_lam``, ``n_rep`` and ``simulated`` (True). ``attrs``: ``simulated``, ``label``, ``seed``,
    ``confidence``.
    """
    if n_rep < 1 or any(n < 2 for n in ns) or any(k < 1 for k in per_stratum):
        raise ValueError(f"need n_rep >= 1, every n >= 2 and every k >= 1; got {n_rep}, {list(ns)}, "
                         f"{list(per_stratum)}")
    z = z_value(confidence)
    rows = []

    def add(design: str, kind: str, n: int, k: int, method: str, est: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            lam: np.ndarray, truth: float) -> None:
        rows.append({"design": design, "kind": kind, "n_labelled": n, "per_stratum": k, "method": method,
                     "coverage": float(((lo <= truth) & (truth <= hi)).mean()), "mean_width": float((hi - lo).mean()),
                     "mean_lam": float(lam.mean()), "n_rep": n_rep, "simulated": True})

    for kind in ("mean", "share"):
        for n in ns:
            rng = np.random.default_rng([seed, _MODELS["srs", kind], n])
            y, yhat, truth = _srs_draw(rng, kind, n, n_rep)
            yl, yhl, yu = y[:, :n], yhat[:, :n], yhat[:, n:]
            ppi = ppi_batch(yl, yhl, yu, confidence=confidence)
            lab = ppi_batch(yl, np.zeros_like(yl), np.zeros((n_rep, 0)), lam=0.0, confidence=confidence)
            est, se, lam = ppi_kernel(yl, yhl, yu, None)
            add("srs", kind, n, 0, "ppi", ppi["estimate"], ppi["lo"], ppi["hi"], ppi["lam"], truth)
            add("srs", kind, n, 0, "labels_only", lab["estimate"], lab["lo"], lab["hi"], lab["lam"], truth)
            add("srs", kind, n, 0, "ppi_py_normal", est, est - z * se, est + z * se, lam, truth)
    for kind in ("mean", "share"):
        for k in per_stratum:
            rng = np.random.default_rng([seed, _MODELS["stratified", kind], k])
            yl, yhl, yall, w, truth = _stratified_draw(rng, kind, k, n_rep)
            strata = np.repeat([0, 1], k)
            ppi = ppi_batch(yl, yhl, yall, w=w, strata=strata, confidence=confidence)
            lab = ppi_batch(yl, np.zeros_like(yl), np.zeros((n_rep, 0)), lam=0.0, w=w, strata=strata,
                            confidence=confidence)
            wn = w / w.mean(1, keepdims=True)
            est, se, lam = ppi_kernel(yl, yhl, yall, None, wn)
            add("stratified", kind, 2 * k, k, "ppi", ppi["estimate"], ppi["lo"], ppi["hi"], ppi["lam"], truth)
            add("stratified", kind, 2 * k, k, "labels_only", lab["estimate"], lab["lo"], lab["hi"], lab["lam"], truth)
            add("stratified", kind, 2 * k, k, "ppi_py_normal", est, est - z * se, est + z * se, lam, truth)
    out = pd.DataFrame(rows, columns=list(SMALL_SAMPLE_COLUMNS))
    out.attrs.update({"simulated": True, "label": SIMULATED_LABEL, "seed": seed, "confidence": confidence})
    return out


def format_small_sample_table(table: pd.DataFrame) -> str:
    """The small-sample table for ``make bench``: a SIMULATED header, then one line per (design, kind, n)
    with each method's coverage (percent)."""
    a = table.attrs
    head = [a.get("label", SIMULATED_LABEL),
            f"  small labelled samples: {int(table['n_rep'].iloc[0])} replications per row, seed {a.get('seed')}; "
            f"coverage of the truth by {100 * a.get('confidence', CONFIDENCE):.0f}% intervals (models: "
            "axon_eval.stats.coverage); ppi = published (lam = 1 and Student-t below 50 labels), "
            "ppi_py_normal = ppi_py's normal PPI++ interval",
            f"  {'design':<34} {'kind':<6} {'n':>4}  " + "  ".join(f"{m:>14}" for m in SMALL_SAMPLE_METHODS)]
    for (design, kind, n, k), cell in table.groupby(["design", "kind", "n_labelled", "per_stratum"], sort=False):
        coverage = cell.set_index("method")["coverage"]
        label = SIMULATED_COVERAGE_DESIGNS[design] + (f" ({k}/stratum)" if k else "")
        head.append(f"  {label:<34} {kind:<6} {n:>4}  "
                    + "  ".join(f"{100 * coverage[m]:13.1f}%" for m in SMALL_SAMPLE_METHODS))
    return "\n".join(head)
