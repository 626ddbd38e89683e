"""Figures of notebooks/03_judge_noise.ipynb, drawn from a :class:`axon_eval.stats.noise.JudgeNoiseSummary`'s parts.

``simulated=True`` puts :data:`NOISE_SIMULATED_PREFIX` at the start of the title; save them with
:func:`~.style.save_titled_figure` so the PNG carries its title.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..rubric import DIMENSIONS
from .style import _nan_note


NOISE_SIMULATED_PREFIX = "SIMULATED: "
_NOISE_COLOURS = {"mean": "#1565c0", "median": "#6a1b9a"}


def _noise_title(fig: Figure, text: str, simulated: bool) -> str:
    title = (NOISE_SIMULATED_PREFIX if simulated else "") + text
    fig.suptitle(title, fontsize=10)
    return title


def noise_sd_icc(sd: dict[str, float], icc: pd.DataFrame, *, simulated: bool) -> Figure:
    """Left: pooled within-segment SD of each dimension (points, 0-10 scale) with the score's SD
    (0-100 scale) in the axis label. Right: ICC(1,1) of each dimension and the score with its confidence
    interval; an undefined ICC (no variation) is marked, not drawn as 0. ``sd``: ``summary.sd``;
    ``icc``: ``summary.icc`` (:func:`axon_eval.stats.noise.icc_table`)."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    dims = [d for d in DIMENSIONS if d in sd]
    values = np.array([sd[d] for d in dims], dtype=np.float64)
    y = np.arange(len(dims))
    left.barh(y, np.nan_to_num(values), color="#546e7a")
    for i, v in enumerate(values):
        left.text(np.nan_to_num(v) + 0.02, i, "n/a" if np.isnan(v) else f"{v:.2f}", va="center", fontsize=8)
    left.set_yticks(y, dims, fontsize=8)
    left.invert_yaxis()
    left.set_xlim(0, max(1.2, float(np.nanmax(values)) * 1.3) if np.isfinite(values).any() else 1.2)
    score_sd = sd.get("score", float("nan"))
    left.set_xlabel("within-segment SD (subscore points)\n"
                    + (f"score SD {score_sd:.2f} of 100" if np.isfinite(score_sd) else "score SD n/a"))
    left.set_title("judge noise per dimension", fontsize=9)
    table = icc.set_index("column")
    columns = [c for c in (*DIMENSIONS, "score") if c in table.index]
    est = table.loc[columns, "icc1"].to_numpy(dtype=np.float64)
    low = table.loc[columns, "icc1_ci_low"].to_numpy(dtype=np.float64)
    high = table.loc[columns, "icc1_ci_high"].to_numpy(dtype=np.float64)
    y2 = np.arange(len(columns))
    ok = np.isfinite(est)
    right.errorbar(est[ok], y2[ok], xerr=[np.nan_to_num(est[ok] - low[ok]), np.nan_to_num(high[ok] - est[ok])],
                   fmt="o", color="#1565c0", capsize=3)
    for i in np.flatnonzero(~ok):
        right.text(0.5, y2[i], "undefined (no variation)", va="center", ha="center", fontsize=8, color="#c62828")
    right.set_yticks(y2, columns, fontsize=8)
    right.invert_yaxis()
    lowest = float(np.nanmin(low)) if np.isfinite(low).any() else 0.0
    right.set_xlim(min(0.0, lowest - 0.05), 1.02)
    right.set_xlabel("ICC(1,1)\n(1: a judgement's variance is all between segments)")
    right.set_title("reliability of one judgement (95% CI)", fontsize=9)
    _noise_title(fig, "Judge noise on fixed evidence: within-segment SD and ICC(1,1)", simulated)
    return fig


def noise_flip_curve(curve, *, simulated: bool) -> Figure:
    """Each segment's band flip across samples (0/1, drawn at its mean score's distance to the nearest
    band edge) and the fitted logistic P(flip) with its pointwise band; when the curve is not identified
    (e.g. no segment flipped) its note is shown instead. ``curve``: a
    :class:`~axon_eval.stats.noise.FlipCurve` (``summary.flip``)."""
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    points = curve.points
    flipped = points["flipped"].to_numpy(dtype=bool)
    distance = points["distance"].to_numpy(dtype=np.float64)
    ax.scatter(distance[~flipped], np.zeros((~flipped).sum()), s=14, marker="|", color="#546e7a",
               label="same band in every sample")
    ax.scatter(distance[flipped], np.ones(flipped.sum()), s=14, marker="|", color="#c62828",
               label="band flipped across samples")
    grid = curve.grid
    if grid["flip_probability"].notna().any():
        ax.fill_between(grid["distance"], grid["ci_low"], grid["ci_high"], color="#90caf9", alpha=0.5,
                        label=f"{curve.confidence:.0%} pointwise band")
        ax.plot(grid["distance"], grid["flip_probability"], color="#1565c0", label="fitted P(flip)")
    else:
        _nan_note(ax, curve.note or "curve not identified")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlim(left=0)
    ax.set_xlabel("distance of the segment's mean score to the nearest band edge (points)")
    ax.set_ylabel("P(band differs across samples)")
    ax.legend(loc="center right", fontsize=8)
    _noise_title(fig, f"Band flips against distance to a band edge ({curve.n_segments} segments x "
                      f"{curve.n_samples} samples)", simulated)
    return fig


def noise_decision_study(decision: pd.DataFrame, components=None, *, target: float = 0.9,
                         simulated: bool) -> Figure:
    """Left: variance components of the score (segment, sample/member, residual) as shares. Right: the
    decision study, reliability of the mean of k judgements (``g_relative``, ``phi_absolute``) against k
    with the target. ``decision``: ``summary.decision``; ``components``: ``summary.variance`` (or None)."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    if components is not None and np.isfinite(components.total_var) and components.total_var > 0:
        parts = components.table()
        left.bar(parts["component"], parts["share"], color=["#2e7d32", "#f9a825", "#c62828"][:len(parts)])
        for i, row in enumerate(parts.to_dict("records")):
            left.text(i, row["share"] + 0.02, f"{row['share']:.1%}\nSD {row['sd']:.2f}", ha="center", fontsize=8)
        left.set_ylim(0, 1.15)
    else:
        _nan_note(left, "variance components not estimable\n(no variation in the scores)")
    left.set_ylabel("share of score variance")
    left.set_title("variance components of the score", fontsize=9)
    if len(decision) and decision[["g_relative", "phi_absolute"]].notna().any().any():
        right.plot(decision["k"], decision["g_relative"], marker="o", color="#1565c0", label="E rho^2 (relative)")
        right.plot(decision["k"], decision["phi_absolute"], marker="s", linestyle="--", color="#6a1b9a",
                   label="Phi (absolute)")
        right.axhline(target, color="black", linestyle=":", linewidth=1, label=f"target {target:g}")
        right.legend(loc="lower right", fontsize=8)
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        _nan_note(right, "reliability undefined (no variation)")
    right.set_xlabel("judgements averaged (k)")
    right.set_ylabel("reliability of the k-mean")
    right.set_title("decision study", fontsize=9)
    _noise_title(fig, "Generalizability: where the score variance lies, and samples needed", simulated)
    return fig


def noise_ensemble(table: pd.DataFrame, flip_target: float, *, simulated: bool) -> Figure:
    """Band flip rate (left, with ``flip_target``) and score SD (right) of k-judgement ensembles against
    k, one line per reducer. ``table``: ``summary.ensemble.table``."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    for reducer, part in table.groupby("reducer", sort=False):
        colour = _NOISE_COLOURS.get(str(reducer), "#546e7a")
        left.plot(part["k"], part["flip_rate"], marker="o", color=colour, label=str(reducer))
        right.plot(part["k"], part["sd"], marker="o", color=colour, label=str(reducer))
    left.axhline(flip_target, color="black", linestyle=":", linewidth=1, label=f"target {flip_target:.1%}")
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    left.set_ylabel("P(two ensembles differ in band)")
    right.set_ylabel("SD of the ensemble score (points)")
    for ax in (left, right):
        ax.set_xlabel("judgements per ensemble (k)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper right", fontsize=8)
    left.set_title("band flips", fontsize=9)
    right.set_title("score spread", fontsize=9)
    _noise_title(fig, "Ensembles of k judgements (bootstrap over the samples)", simulated)
    return fig
