"""Figures of notebooks/06_judge_drift.ipynb: candidate judge minus anchor judge (:mod:`axon_eval.stats.drift`).

``subtitle`` names the candidate, the anchor and n; ``simulated=True`` prefixes :data:`~.style.SIMULATED_PREFIX`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..rubric import DIMENSIONS
from .style import WEIGHT_COLOURS, _nan_note, _wrapped_title


def drift_bland_altman(ba, *, subtitle: str = "", simulated: bool = False) -> Figure:
    """Bland-Altman plot: each segment's score difference (candidate - anchor) against the pair's mean,
    with the bias and the limits of agreement (bias -+ 1.96 SD) and their CIs shaded. ``ba``: a
    :class:`~axon_eval.stats.drift.BlandAltman` (``drift.bland_altman``)."""
    fig = Figure(figsize=(7.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    pts = ba.points
    ax.scatter(pts["mean"], pts["difference"], s=14, alpha=0.6, color="#37474f", label="segment")
    ax.axhline(0, color="black", linewidth=0.8)
    if ba.bias is not None:
        ax.axhline(ba.bias, color="#1565c0", linewidth=1.4, label=f"bias {ba.bias:+.2f}")
    if ba.lower is not None:
        for value, ci, label in ((ba.lower, ba.lower_ci, "lower"), (ba.upper, ba.upper_ci, "upper")):
            ax.axhline(value, color="#c62828", linestyle="--", linewidth=1.2,
                       label=f"{label} limit of agreement {value:+.2f}")
            ax.axhspan(ci[0], ci[1], color="#ef9a9a", alpha=0.25)
        ax.axhspan(ba.bias_ci[0], ba.bias_ci[1], color="#90caf9", alpha=0.35,
                   label=f"{ba.confidence:.0%} CIs (shaded)")
    else:
        _nan_note(ax, "limits of agreement need at least two segments")
    for edge in (50, 80):
        ax.axvline(edge, color="#b0bec5", linewidth=0.8, linestyle=":")
    ax.set_xlim(0, 100)
    ax.set_xlabel("mean of the two scores (points; band edges dotted)")
    ax.set_ylabel("score difference, candidate - anchor (points)")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title(_wrapped_title("Bland-Altman: candidate judge against the anchor", subtitle, simulated), fontsize=10)
    ax.annotate("Bland & Altman (1986), Lancet i: 307-310", (0.01, 0.02), xycoords="axes fraction", fontsize=7,
                color="#555555")
    return fig


def drift_delta_histogram(deltas: pd.DataFrame, *, subtitle: str = "", simulated: bool = False) -> Figure:
    """Histogram of per-segment score differences (candidate - anchor, 1-point bins), bars of segments
    that change band stacked in red. ``deltas``: ``drift.deltas`` (``RunComparison.deltas``)."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    d = pd.to_numeric(deltas["delta"], errors="coerce").to_numpy(dtype=float)
    moved = (deltas["band_a"].astype(str) != deltas["band_b"].astype(str)).to_numpy()
    reach = max(5.0, float(np.ceil(np.nanmax(np.abs(d))))) if len(d) else 5.0
    edges = np.arange(-reach - 0.5, reach + 1.0, 1.0)
    ax.hist([d[~moved], d[moved]], bins=edges, stacked=True, color=["#546e7a", "#c62828"],
            label=["same band", "band changed"])
    ax.axvline(0, color="black", linewidth=0.8)
    if len(d):
        ax.axvline(float(np.mean(d)), color="#1565c0", linewidth=1.2, label=f"mean {np.mean(d):+.2f}")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("score difference, candidate - anchor (points)")
    ax.set_ylabel("segments")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(_wrapped_title("Per-segment score differences", subtitle, simulated), fontsize=10)
    return fig


def drift_dimensions(dimensions: pd.DataFrame, *, confidence: float = 0.95, limit: float | None = None,
                     subtitle: str = "", simulated: bool = False) -> Figure:
    """Per-dimension mean subscore difference (candidate - anchor) with its bootstrap CI; ``limit`` draws
    the thresholds file's per-dimension limit. ``dimensions``: ``drift.dimensions``."""
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.add_subplot()
    table = dimensions.set_index("dimension").reindex(list(DIMENSIONS))
    y = np.arange(len(table))
    mean = pd.to_numeric(table["mean_delta"], errors="coerce").to_numpy(dtype=float)
    low = pd.to_numeric(table["ci_low"], errors="coerce").to_numpy(dtype=float)
    high = pd.to_numeric(table["ci_high"], errors="coerce").to_numpy(dtype=float)
    colours = [WEIGHT_COLOURS[d] for d in table.index]
    ax.errorbar(mean, y, xerr=np.vstack([mean - low, high - mean]), fmt="none", ecolor="#455a64", capsize=4)
    ax.scatter(mean, y, color=colours, zorder=3, s=40)
    for i, n in enumerate(table["n"]):
        ax.text(1.01, y[i], f"n {int(n) if pd.notna(n) else 0}", transform=ax.get_yaxis_transform(), va="center",
                fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    if limit is not None:
        for sign in (-1, 1):
            ax.axvline(sign * limit, color="#c62828", linestyle="--", linewidth=1)
    ax.set_yticks(y, table.index)
    ax.invert_yaxis()
    ax.set_xlabel(f"mean subscore difference, candidate - anchor (0-10 scale; {confidence:.0%} bootstrap CI)")
    ax.set_title(_wrapped_title("Per-dimension drift", subtitle, simulated), fontsize=10)
    return fig
