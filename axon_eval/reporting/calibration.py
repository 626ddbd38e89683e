"""Figures of notebooks/05_calibration.ipynb: the judge against human labels (:mod:`axon_eval.stats.agreement`).

``note`` goes under every title; with constructed labels it must say they are CONSTRUCTED, not human.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..rubric import BANDS, Rubric
from .style import BAND_COLOURS, _annotate_heatmap, _rubric, _undefined_bar


def _c05_title(text: str, note: str) -> str:
    return f"{text}\n{note}" if note else text


def calibration_confusion(confusion: pd.DataFrame, *, note: str = "") -> Figure:
    """Heatmap of judge band (rows) against human verdict (columns) with counts; the diagonal agrees."""
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    table = confusion.reindex(index=list(BANDS), columns=list(BANDS), fill_value=0)
    values = table.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=max(float(values.max()), 1.0))
    _annotate_heatmap(ax, image, values, bold_diagonal=True, fontsize=11)
    ax.set_xticks(range(len(BANDS)), list(BANDS))
    ax.set_yticks(range(len(BANDS)), list(BANDS))
    ax.set_xlabel("human verdict")
    ax.set_ylabel("judge band (scorer)")
    ax.set_title(_c05_title(f"Judge band vs human verdict (n = {int(values.sum())})", note), fontsize=9)
    return fig


def calibration_scatter(pairs: pd.DataFrame, rubric: Rubric | None = None, *, note: str = "") -> Figure:
    """Judge score against human score per segment (colour: human verdict), band edges dashed, y = x."""
    rubric = _rubric(rubric)
    fig = Figure(figsize=(6, 5), layout="constrained")
    ax = fig.add_subplot()
    for band in BANDS:
        sub = pairs[pairs["human_verdict"] == band]
        ax.scatter(sub["human_score"], sub["judge_score"], s=22, alpha=0.75, color=BAND_COLOURS[band],
                   label=f"human: {band} ({len(sub)})")
    for edge in (rubric.bands.partial, rubric.bands.good):
        ax.axhline(edge, color="grey", linestyle="--", linewidth=0.8)
        ax.axvline(edge, color="grey", linestyle="--", linewidth=0.8)
    ax.plot([0, 100], [0, 100], color="black", linewidth=0.7)
    ax.set_xlim(-2, 102)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("human score (raters' subscores through the same rubric; mean over raters)")
    ax.set_ylabel("judge score")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(_c05_title("Judge score vs human score", note), fontsize=9)
    return fig


def calibration_by_margin(by_margin: dict[str, pd.DataFrame], *, note: str = "") -> Figure:
    """One panel per stratifier: the design-weighted share of equal bands per level (bars, n above),
    and the overall design-weighted share (dashed)."""
    keys = list(by_margin)
    fig = Figure(figsize=(4.2 * max(len(keys), 1), 3.8), layout="constrained")
    axes = fig.subplots(1, max(len(keys), 1), squeeze=False)[0]
    for ax, key in zip(axes, keys, strict=False):
        table = by_margin[key]
        levels = table.drop(index="all", errors="ignore")
        x = np.arange(len(levels))
        agreement = pd.to_numeric(levels["agreement"], errors="coerce").to_numpy(dtype=float)
        defined = np.isfinite(agreement)
        ax.bar(x[defined], agreement[defined], color="#5c6bc0")
        for i, n in enumerate(levels["n"]):
            if not defined[i]:
                _undefined_bar(ax, x[i], f"undefined (n {int(n)})")
                continue
            ax.text(x[i], min(float(agreement[i]) + 0.02, 1.02), f"n {int(n)}", ha="center", fontsize=7)
        if "all" in table.index:
            ax.axhline(float(table.loc["all", "agreement"]), color="black", linestyle="--", linewidth=0.8,
                       label="all (design-weighted)")
        ax.set_xticks(x, [str(v) for v in levels.index], rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1.1)
        ax.set_title(f"by {key}", fontsize=9)
        ax.set_ylabel("share of equal bands (design-weighted)")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(_c05_title("Band agreement per stratum", note), fontsize=9)
    return fig


def calibration_gate_figure(table: pd.DataFrame, *, threshold: float = 0.7, gate_metric: str = "kappa",
                            note: str = "") -> Figure:
    """Each statistic of ``CalibrationAgreement.table()`` with its CI; the gate's threshold as a red line
    (the gate statistic in bold: it passes only when its whole interval lies right of the line)."""
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.add_subplot()
    t = table.reset_index()
    y = np.arange(len(t))
    value = pd.to_numeric(t["value"], errors="coerce").to_numpy(dtype=float)
    low = pd.to_numeric(t["ci_low"], errors="coerce").to_numpy(dtype=float)
    high = pd.to_numeric(t["ci_high"], errors="coerce").to_numpy(dtype=float)
    has = np.isfinite(low) & np.isfinite(high)
    ax.errorbar(value[has], y[has], xerr=np.vstack([value[has] - low[has], high[has] - value[has]]), fmt="o",
                color="#37474f", capsize=4)
    ax.scatter(value[~has], y[~has], marker="D", color="#8e24aa", zorder=3, label="between raters (ceiling)")
    ax.axvline(threshold, color="#c62828", linestyle="--", linewidth=1.2, label=f"gate {threshold:g}")
    labels = [f"{s}  (n {n})" for s, n in zip(t["statistic"], t["n"], strict=True)]
    ax.set_yticks(y, labels, fontsize=8)
    for tick, stat in zip(ax.get_yticklabels(), t["statistic"], strict=True):
        if stat == gate_metric:
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlim(min(-0.05, np.nanmin(np.r_[low, value]) - 0.05) if np.isfinite(np.nanmin(np.r_[low, value])) else -0.05,
                1.05)
    ax.set_xlabel("agreement (CI: seeded bootstrap)")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(_c05_title("Agreement with the gate", note), fontsize=9)
    return fig
