"""Figures of notebooks/02_weight_sensitivity.ipynb, drawn from :mod:`axon_eval.stats.sensitivity` tables.

``subtitle`` is a second title line (which run, how many segments, which judge); ``simulated=True`` prefixes
:data:`~.style.SIMULATED_PREFIX`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..rubric import BANDS, DIMENSIONS, Rubric
from .style import BAND_COLOURS, WEIGHT_COLOURS, _rubric, _wrapped_title


def weight_oat_deltas(oat: pd.DataFrame, worst_case: dict[float, float] | None = None, *, subtitle: str = "",
                      simulated: bool = False) -> Figure:
    """One weight at a time: the largest |score change| over the segments (y, points) against the signed
    step of the perturbed weight (x), one line per weight; ``worst_case`` ({d: exact worst |delta| over
    the box P_d}) is drawn dashed at -d and +d for comparison.

    ``oat``: :attr:`WeightSensitivitySummary.oat` (columns ``perturbed``, ``step``, ``max_abs_delta``).
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for dim in DIMENSIONS:
        part = oat[oat["perturbed"] == dim].sort_values("step")
        if part.empty:
            continue
        steps = np.r_[part["step"].to_numpy(dtype=float), 0.0]
        deltas = np.r_[part["max_abs_delta"].to_numpy(dtype=float), 0.0]
        order = np.argsort(steps)
        ax.plot(steps[order], deltas[order], marker="o", markersize=4, color=WEIGHT_COLOURS.get(dim), label=dim)
    if worst_case:
        ds = np.array(sorted(worst_case), dtype=float)
        wc = np.array([worst_case[d] for d in sorted(worst_case)], dtype=float)
        ax.plot(np.r_[-ds[::-1], 0.0, ds], np.r_[wc[::-1], 0.0, wc], color="black", linestyle="--", linewidth=1,
                marker="x", label="exact worst case, all four weights within d (box)")
    ax.axvline(0, color="#9e9e9e", linewidth=0.8)
    ax.set_xlabel("step of the perturbed weight (the other three rescaled to keep the sum 1)")
    ax.set_ylabel("largest |score change| over segments (points)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper center")
    ax.set_title(_wrapped_title("One weight at a time: largest score change per step", subtitle, simulated),
                 fontsize=10)
    return fig


def weight_score_ranges(worst: pd.DataFrame, rubric: Rubric | None = None, *, d: float, subtitle: str = "",
                        simulated: bool = False) -> Figure:
    """Every segment's exact score range within the box ``P_d`` (vertical bar from ``score_min`` to
    ``score_max``) around its nominal score (dot), segments sorted by nominal score and coloured by
    nominal band; band edges dashed. The lowest score any good segment can reach and the highest any poor
    one can reach are drawn as horizontal lines: while the first is above the second no good/poor pair
    can swap order (the exact pair test may still clear pairs whose ranges overlap).

    ``worst``: :attr:`WorstCase.per_segment` for that ``d``.
    """
    rubric = _rubric(rubric)
    table = worst.sort_values(["nominal_score", "segment_id"], kind="stable").reset_index(drop=True)
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(table))
    bands = table["nominal_band"].astype(str).to_numpy()
    for band in BANDS:
        on = bands == band
        if not on.any():
            continue
        ax.vlines(x[on], table["score_min"].to_numpy()[on], table["score_max"].to_numpy()[on],
                  color=BAND_COLOURS[band], linewidth=2, alpha=0.6)
        ax.scatter(x[on], table["nominal_score"].to_numpy()[on], s=10, color=BAND_COLOURS[band],
                   label=f"nominally {band}", zorder=3)
    for edge in (rubric.bands.partial, rubric.bands.good):
        ax.axhline(edge, color="black", linestyle="--", linewidth=0.8)
    good, poor = bands == "good", bands == "poor"
    if good.any():
        low = float(table["score_min"].to_numpy()[good].min())
        ax.axhline(low, color=BAND_COLOURS["good"], linewidth=0.8, linestyle=":")
        ax.text(0.01, low, f"lowest a good segment can fall: {low:.1f}", color=BAND_COLOURS["good"], fontsize=8,
                va="bottom", transform=ax.get_yaxis_transform())
    if poor.any():
        high = float(table["score_max"].to_numpy()[poor].max())
        ax.axhline(high, color=BAND_COLOURS["poor"], linewidth=0.8, linestyle=":")
        ax.text(0.99, high, f"highest a poor segment can rise: {high:.1f}", color=BAND_COLOURS["poor"], fontsize=8,
                va="bottom", ha="right", transform=ax.get_yaxis_transform())
    ax.set_ylim(0, 101)
    ax.set_xlim(-1, max(len(table), 1))
    ax.set_xlabel("segments, sorted by nominal score")
    ax.set_ylabel("score (points)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(_wrapped_title(f"Exact score range of each segment for weights within d = {d:g} of nominal",
                              subtitle, simulated), fontsize=10)
    return fig


def band_flip_rates(rates: pd.DataFrame, *, subtitle: str = "", simulated: bool = False) -> Figure:
    """Per perturbation size ``d`` (x): the band flip rate of the sampled box design (share of
    (vector, segment) pairs whose band differs from nominal) and, when the column is there, the exact
    share of segments whose band can change somewhere in the box (``band_change_share``).

    ``rates``: one row per ``d`` with columns ``d``, ``band_flip_rate`` [, ``band_change_share``].
    """
    rates = rates.sort_values("d")
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(rates["d"], rates["band_flip_rate"], marker="o", color="#c62828",
            label="sampled: share of (vector, segment) pairs that change band")
    if "band_change_share" in rates.columns:
        ax.plot(rates["d"], rates["band_change_share"], marker="s", color="#37474f", linestyle="--",
                label="exact: share of segments whose band can change in the box")
    ax.set_xlabel("perturbation size d (every weight within d of nominal)")
    ax.set_ylabel("share")
    top = float(np.nanmax(rates[[c for c in ("band_flip_rate", "band_change_share") if c in rates.columns]].to_numpy()))
    ax.set_ylim(0, max(0.05, top * 1.15))
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(_wrapped_title("Band changes against perturbation size", subtitle, simulated), fontsize=10)
    return fig


def flips_by_band_edge_distance(per_segment: pd.DataFrame, *, d: float, reach: float | None = None,
                                subtitle: str = "", simulated: bool = False) -> Figure:
    """Who flips: each segment's distance from its nominal score to the nearest band edge (x, points)
    against the share of sampled vectors in ``P_d`` that changed its band (y). ``reach`` (the exact
    worst-case |delta| for that ``d``) is drawn as a vertical line: no segment farther from an edge
    than that can change band.

    ``per_segment``: :attr:`WeightSweep.per_segment` (``distance_to_band_edge``, ``flip_share``,
    ``nominal_band``).
    """
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.add_subplot()
    bands = per_segment["nominal_band"].astype(str).to_numpy()
    for band in BANDS:
        on = bands == band
        if on.any():
            ax.scatter(per_segment["distance_to_band_edge"].to_numpy()[on], per_segment["flip_share"].to_numpy()[on],
                       s=14, alpha=0.7, color=BAND_COLOURS[band], label=f"nominally {band}")
    if reach is not None:
        ax.axvline(reach, color="black", linestyle="--", linewidth=0.8)
        ax.text(reach, 0.98, f" exact worst |delta| {reach:.1f}", fontsize=8, va="top",
                transform=ax.get_xaxis_transform())
    ax.set_xlabel("distance of the nominal score to the nearest band edge (points)")
    ax.set_ylabel("share of sampled vectors that change its band")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(left=-0.5)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(_wrapped_title(f"Who changes band (d = {d:g}): flips against distance to a band edge",
                              subtitle, simulated), fontsize=10)
    return fig


def sobol_bars(table: pd.DataFrame, *, subtitle: str = "", simulated: bool = False) -> Figure:
    """Sobol first-order (S1) and total (ST) indices per weight with their bootstrap 95% intervals, one
    panel per output (``mean_score``, ``share_good``). An output without variance (NaN indices) is
    marked, not plotted.

    ``table``: :attr:`WeightSobol.table` (``output``, ``weight``, ``S1``, ``S1_conf``, ``ST``, ``ST_conf``).
    """
    outputs = list(dict.fromkeys(table["output"]))
    fig = Figure(figsize=(5 * max(len(outputs), 1), 4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(len(outputs), 1), sharey=True))
    for ax, out in zip(axes, outputs, strict=False):
        part = table[table["output"] == out].set_index("weight").reindex(list(DIMENSIONS))
        y = np.arange(len(part))
        if part[["S1", "ST"]].isna().all().all():
            ax.text(0.5, 0.5, "no variance: indices undefined", ha="center", va="center", transform=ax.transAxes)
        else:
            ax.barh(y - 0.2, part["S1"].fillna(0), height=0.4, xerr=part["S1_conf"].fillna(0), color="#90a4ae",
                    label="S1 (first order)")
            ax.barh(y + 0.2, part["ST"].fillna(0), height=0.4, xerr=part["ST_conf"].fillna(0), color="#37474f",
                    label="ST (total)")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_yticks(y, list(DIMENSIONS))
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel("share of variance")
        ax.set_title(out.replace("_", " "), fontsize=10)
    fig.suptitle(_wrapped_title("Sobol indices of the four weights", subtitle, simulated), fontsize=10)
    return fig
