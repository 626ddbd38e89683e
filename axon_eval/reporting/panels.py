"""Figures of study 10 (judge panel design, ``notebooks/10_panel_design.ipynb``), drawn from the tables of
:func:`axon_eval.stats.panels.panel_study` (nothing is computed here beyond choosing what to draw).

* :func:`panel_frontier`: every panel's agreement (the band kappa's lower confidence bound, the metric the
  frontier and the recommendation rank by) against its cost per 1,000 turns; the Pareto-optimal panels
  joined and named, the recommended one starred, the target as a dashed line.
* :func:`error_correlation_heatmap`: the members' Pearson correlation of errors against the labels, each
  cell written in black or white, whichever contrasts more with the cell (WCAG luminance,
  :func:`axon_eval.reporting.style.cell_text_colour`).
* :func:`escalation_curve`: per panel, the share of segments escalated to a person against the band kappa
  (and its interval) on the segments left, one point per threshold ``t``, with the target.

Every title starts with ``SIMULATED:`` when any member shown is simulated. Style helpers (saving,
text contrast) are imported from :mod:`axon_eval.reporting.style`, not copied.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from .style import cell_text_colour, save_figure, save_titled_figure  # noqa: F401  (re-exported for the notebook)

#: First words of every title of a figure with a simulated member.
PANEL_SIMULATED_PREFIX = "SIMULATED: "
#: Colour of panels by size k (1 .. 4); larger panels reuse the last colour.
PANEL_SIZE_COLOURS = ("#546e7a", "#1565c0", "#6a1b9a", "#ef6c00")
#: Most Pareto panels named on the frontier figure (the cheapest ones; the rest are drawn, not named).
MAX_FRONTIER_LABELS = 8
#: Background of a heatmap cell whose correlation is undefined (written ``n/a``).
UNDEFINED_CELL_COLOUR = "#e0e0e0"
#: Colours of the escalation curves, in the order the panels are given.
ESCALATION_COLOURS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00")


def panel_title(text: str, simulated: bool, subtitle: str = "", width: int = 90) -> str:
    """``SIMULATED: `` (when ``simulated``) + ``text``, wrapped, with ``subtitle`` on the lines below."""
    head = (PANEL_SIMULATED_PREFIX if simulated else "") + text
    lines = textwrap.wrap(head, width) + (textwrap.wrap(subtitle, width + 10) if subtitle else [])
    return "\n".join(lines)


def short_member(member: str) -> str:
    """A member id for a tick label: ``simulated:lenient -> sim:lenient``; long ids cut at 28 characters."""
    text = member.replace("simulated:", "sim:")
    return text if len(text) <= 28 else text[:27] + "…"


def _cost_axis(ax, costs: np.ndarray) -> None:
    """Linear cost axis, or symmetric-log when the positive costs span more than two decades (a free
    member, cost 0, stays on the axis either way)."""
    pos = costs[np.isfinite(costs) & (costs > 0)]
    if len(pos) and pos.max() / pos.min() > 100:
        ax.set_xscale("symlog", linthresh=float(pos.min()))
    ax.set_xlabel("cost per 1,000 turns (USD)")


def panel_frontier(panels: pd.DataFrame, *, target: float, metric: str = "band_kappa_lo",
                   recommended: str | None = None, simulated: bool = False, subtitle: str = "") -> Figure:
    """Agreement against cost: every panel of ``panels`` (``PanelStudy.panels``) with a known cost as a dot
    coloured by size, the ``pareto`` ones joined cheapest first and named (at most
    :data:`MAX_FRONTIER_LABELS`), ``recommended`` (a ``panel_id``) starred, ``target`` dashed. Panels with an
    unknown cost or agreement cannot be placed: their count is said in the legend."""
    fig = Figure(figsize=(9.5, 5.6), layout="constrained")
    ax = fig.add_subplot()
    cost = pd.to_numeric(panels["cost_per_1k_turns"], errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(panels[metric], errors="coerce").to_numpy(dtype=float)
    placed = np.isfinite(cost) & np.isfinite(y)
    k = panels["k"].to_numpy(dtype=int)
    for size in sorted(set(k[placed].tolist())):
        sel = placed & (k == size)
        ax.scatter(cost[sel], y[sel], s=14, alpha=0.45, color=PANEL_SIZE_COLOURS[min(size, len(PANEL_SIZE_COLOURS)) - 1],
                   label=f"{size} member{'s' if size > 1 else ''} ({int(sel.sum())} panels)", zorder=2)
    front = panels[placed & panels["pareto"].to_numpy(dtype=bool)].sort_values(["cost_per_1k_turns", metric],
                                                                                ascending=[True, False])
    if len(front):
        ax.step(front["cost_per_1k_turns"], front[metric], where="post", color="black", linewidth=1.2, zorder=3)
        ax.scatter(front["cost_per_1k_turns"], front[metric], s=40, facecolor="white", edgecolor="black",
                   linewidth=1.3, zorder=4, label=f"Pareto-optimal ({len(front)})")
        for i, r in enumerate(front.head(MAX_FRONTIER_LABELS).itertuples(index=False)):
            ax.annotate(r.panel_id.replace("simulated:", "sim:"), (r.cost_per_1k_turns, getattr(r, metric)),
                        xytext=(6, -10 if i % 2 else 6), textcoords="offset points", fontsize=6.5, color="#212121")
    if recommended is not None and (panels["panel_id"] == recommended).any():
        r = panels[panels["panel_id"] == recommended].iloc[0]
        ax.scatter([r["cost_per_1k_turns"]], [r[metric]], marker="*", s=260, color="#fbc02d", edgecolor="black",
                   zorder=5, label=f"recommended: {recommended.replace('simulated:', 'sim:')}")
    ax.axhline(target, color="#c62828", linestyle="--", linewidth=1.2, label=f"target {target:g}", zorder=1)
    unplaced = int((~placed).sum())
    if unplaced:
        ax.plot([], [], " ", label=f"{unplaced} panel(s) not placed (unknown cost or agreement)")
    _cost_axis(ax, cost)
    ax.set_ylabel("band kappa, lower confidence bound" if metric == "band_kappa_lo" else metric)
    lo = np.nanmin(y[placed]) if placed.any() else 0.0
    ax.set_ylim(min(lo, target) - 0.05, 1.03)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(panel_title("Panel agreement against cost: the Pareto frontier", simulated, subtitle), fontsize=9)
    return fig


def error_correlation_heatmap(matrix: pd.DataFrame, *, target: str = "score", simulated: bool = False,
                              subtitle: str = "") -> Figure:
    """The members' error-correlation matrix (``MemberDiagnostics.matrix(target)``) on a diverging scale
    fixed at -1 .. 1, each cell written with two decimals (``n/a`` where the correlation is undefined) in
    the text colour that reads on it."""
    members = [str(m) for m in matrix.index]
    values = matrix.to_numpy(dtype=float)
    n = len(members)
    side = max(4.5, 0.9 * n + 2.5)
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.add_subplot()
    cmap = colormaps["RdBu_r"].with_extremes(bad=UNDEFINED_CELL_COLOUR)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1)
    for i in range(n):
        for j in range(n):
            v = values[i, j]
            background = image.cmap(image.norm(v)) if math.isfinite(v) else UNDEFINED_CELL_COLOUR
            ax.text(j, i, "n/a" if not math.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color=cell_text_colour(background))
    labels = [short_member(m) for m in members]
    ax.set_xticks(range(n), labels, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8, label="Pearson correlation of errors (judge - label)")
    what = "the score" if target == "score" else target
    ax.set_title(panel_title(f"Error correlation between members on {what} (sample 0)", simulated, subtitle,
                             width=60), fontsize=9)
    return fig


def escalation_curve(escalation: pd.DataFrame, panel_ids: Sequence[str], *, target: float,
                     panels: pd.DataFrame | None = None, simulated: bool = False, subtitle: str = "") -> Figure:
    """Trust or escalate: for each of ``panel_ids`` (rows of ``PanelStudy.escalation``), the share of the
    labelled segments escalated (x) against the band kappa on the segments left (y, with its interval as
    error bars), one point per threshold ``t`` (written beside it; ``verdicts`` = escalate only on
    differing verdicts). With ``panels`` (``PanelStudy.panels``) each curve starts at 0% escalated with the
    panel's own band kappa ("alone"). A threshold that leaves too few segments for a kappa is not drawn."""
    fig = Figure(figsize=(9, 5.2), layout="constrained")
    ax = fig.add_subplot()
    for i, pid in enumerate(panel_ids):
        rows = escalation[escalation["panel_id"] == pid].sort_values("share_escalated")
        if rows.empty:
            continue
        if panels is not None and (panels["panel_id"] == pid).any():
            own = panels[panels["panel_id"] == pid].iloc[0]
            alone = pd.DataFrame([{"share_escalated": 0.0, "band_kappa": own["band_kappa"], "t": np.nan,
                                   "band_kappa_lo": own["band_kappa_lo"], "band_kappa_hi": own["band_kappa_hi"]}])
            rows = pd.concat([alone, rows[list(alone.columns)]], ignore_index=True)
        x = rows["share_escalated"].to_numpy(dtype=float)
        k = rows["band_kappa"].to_numpy(dtype=float)
        lo, hi = rows["band_kappa_lo"].to_numpy(dtype=float), rows["band_kappa_hi"].to_numpy(dtype=float)
        ok = np.isfinite(x) & np.isfinite(k)
        colour = ESCALATION_COLOURS[i % len(ESCALATION_COLOURS)]
        yerr = np.vstack([np.where(np.isfinite(lo), k - lo, 0), np.where(np.isfinite(hi), hi - k, 0)])[:, ok]
        ax.errorbar(x[ok], k[ok], yerr=yerr, fmt="-o", color=colour, markersize=4, capsize=3, linewidth=1.2,
                    label=pid.replace("simulated:", "sim:"))
        for j, (xt, yt, t) in enumerate(zip(x[ok], k[ok], rows["t"].to_numpy(dtype=float)[ok], strict=True)):
            text = "alone" if math.isnan(t) else "verdicts" if math.isinf(t) else f"t={t:g}"
            ax.annotate(text, (xt, yt), xytext=(4, 4 if j % 2 else -9),
                        textcoords="offset points", fontsize=6.5, color=colour)
    ax.axhline(target, color="#c62828", linestyle="--", linewidth=1.2, label=f"target {target:g} (lower bound)")
    ax.xaxis.set_major_formatter(lambda v, _pos: f"{100 * v:.0f}%")
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("share of labelled segments escalated to a person")
    ax.set_ylabel("band kappa on the segments left (interval: asymptotic)")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(panel_title("Trust or escalate: agreement on what the panel keeps", simulated, subtitle), fontsize=9)
    return fig
