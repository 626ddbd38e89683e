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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .intervals import CONFIDENCE, SEED, z_value
from .ppi import ppi_kernel

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
