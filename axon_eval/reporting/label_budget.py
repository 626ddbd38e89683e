"""Figures of study 11 (label budgets): half-width against labels spent per design, and labels saved
against the signal's quality.

Matplotlib figures from the frames of :mod:`axon_eval.stats.label_budget_sim`, built without ``pyplot``;
every title starts with ``SIMULATED:`` (the numbers come from simulated replications of the labelling
draw). Saving with the title in the PNG metadata is :func:`axon_eval.reporting.style.save_titled_figure`'s.
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure

from .style import save_titled_figure  # noqa: F401  (re-exported for the notebook)

#: Title prefix of every figure here.
SIMULATED_TITLE = "SIMULATED: "
#: Colour and line style of each design.
DESIGN_STYLE: dict[str, tuple[str, str]] = {
    "labels only": ("#d08c2b", ":"),
    "uniform": ("#2b6cb0", "-"),
    "stratified": ("#2f855a", "--"),
    "active": ("#b83280", "-"),
}


def _label(design: str, signal: object) -> str:
    return design if signal is None or (isinstance(signal, float) and math.isnan(signal)) else f"{design} ({signal})"


def curves_figure(curves: pd.DataFrame, population: str, *, title: str, target: float | None = None,
                  show_labels_only: bool = True) -> Figure:
    """Two panels for one population of ``curves`` (:func:`~axon_eval.stats.label_budget_sim.simulate_curves`
    rows): the mean half-width against the labels spent, one line per design (and signal), with the
    ``target`` half-width dashed; and the coverage against the labels with the 93-97% band."""
    frame = curves[curves["population"] == population]
    fig = Figure(figsize=(12, 4.4))
    ax_w, ax_c = fig.subplots(1, 2)
    active = frame[frame["design"] == "active"]["signal"].dropna().unique().tolist()
    shades = {s: 0.35 + 0.65 * (i + 1) / max(len(active), 1) for i, s in enumerate(active)}
    for (design, signal), g in frame.groupby(["design", "signal"], dropna=False, sort=False):
        if design == "labels only" and not show_labels_only:
            continue
        colour, style = DESIGN_STYLE.get(design, ("#555555", "-"))
        alpha = shades.get(signal, 1.0) if design == "active" else 1.0
        g = g.sort_values("n")
        name = _label(design, signal)
        ax_w.plot(g["n"], g["half_width"], style, marker="o", ms=3, color=colour, alpha=alpha, label=name)
        ax_c.plot(g["n"], 100 * g["coverage"], style, marker="o", ms=3, color=colour, alpha=alpha, label=name)
    if target is not None:
        ax_w.axhline(target, color="black", lw=0.8, ls="--", label=f"target +/- {target:g}")
    ax_w.set_xlabel("labels spent")
    ax_w.set_ylabel("mean half-width of the 95% interval")
    ax_w.grid(alpha=0.3)
    ax_w.legend(fontsize=7)
    ax_c.axhspan(93, 97, color="#e6f4ea", label="93-97%")
    ax_c.axhline(95, color="black", lw=0.6)
    ax_c.set_xlabel("labels spent")
    ax_c.set_ylabel("coverage (%)")
    ax_c.set_ylim(85, 100)
    ax_c.grid(alpha=0.3)
    fig.suptitle(SIMULATED_TITLE + title, fontsize=10)
    fig.tight_layout()
    return fig


def labels_saved_figure(saved: pd.DataFrame, *, goal_share: float | None = None, goal_correlation: float | None = None) -> Figure:
    """Labels saved by the active design (share of uniform PPI's labels at the target half-width) against the
    signal's correlation with the judge's error, with the goal drawn."""
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    rho = saved["signal"].map(lambda s: float(str(s).removeprefix("rho=")))
    ax.plot(rho, 100 * saved["share_saved"], marker="o", color=DESIGN_STYLE["active"][0])
    for x, y, n_u, n_a in zip(rho, saved["share_saved"], saved["n_uniform"], saved["n_active"], strict=True):
        if math.isfinite(n_u) and math.isfinite(n_a):
            ax.annotate(f"{n_a:.0f} vs {n_u:.0f}", (x, 100 * y), textcoords="offset points", xytext=(4, -12), fontsize=7)
    ax.axhline(0, color="black", lw=0.6)
    if goal_share is not None:
        ax.axhline(100 * goal_share, color="#888888", ls="--", lw=0.8, label=f"goal: {goal_share:.0%} fewer labels")
    if goal_correlation is not None:
        ax.axvline(goal_correlation, color="#888888", ls=":", lw=0.8)
    ax.set_xlabel("signal's correlation with the judge's absolute error")
    ax.set_ylabel("labels saved vs uniform PPI (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    target = saved["target_half_width"].iloc[0] if len(saved) else math.nan
    fig.suptitle(SIMULATED_TITLE + f"labels the active design saves at a half-width of +/- {target:g}\n"
                 "(annotated: active vs uniform labels needed)", fontsize=10)
    fig.tight_layout()
    return fig
