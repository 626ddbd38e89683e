"""Figures of notebooks/07_weight_recalibration.ipynb, drawn from :mod:`axon_eval.stats.recalibration` tables.

Every title says the labels are constructed when ``constructed=True`` (the offline default).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..rubric import DIMENSIONS, Rubric
from .style import BAND_COLOURS, _rubric, _wrapped_title, _undefined_bar


RECAL_METHOD_COLOURS = {"nominal": "#616161", "least_squares": "#1565c0", "ordinal": "#6a1b9a",
                        "axon-v1-faithcap": "#ef6c00", "axon-v1-faithpartial": "#2e7d32"}
RECAL_CONSTRUCTED = "CONSTRUCTED labels, not human judgements: do not adopt these weights"


def _r07_title(text: str, subtitle: str, constructed: bool) -> str:
    """``text`` on the first line, the constructed-labels warning on the second, ``subtitle`` below."""
    head = f"{text}\n{RECAL_CONSTRUCTED}" if constructed else text
    return _wrapped_title(head, subtitle, False, width=90)


def recal_weights(weights: pd.DataFrame, *, subtitle: str = "", constructed: bool = True) -> Figure:
    """Nominal and fitted weights side by side: one group of bars per dimension, one bar per column of
    ``weights`` (:meth:`RecalibrationStudy.weights_table`; rows = dimensions). A method without weights
    (all NaN) is marked in the legend, not drawn as 0."""
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    table = weights.reindex(list(DIMENSIONS))
    x = np.arange(len(table))
    width = 0.8 / max(len(table.columns), 1)
    for j, method in enumerate(table.columns):
        values = pd.to_numeric(table[method], errors="coerce").to_numpy(dtype=float)
        label = method if np.isfinite(values).any() else f"{method} (no weights)"
        bars = ax.bar(x + (j - (len(table.columns) - 1) / 2) * width, np.nan_to_num(values, nan=0.0), width,
                      color=RECAL_METHOD_COLOURS.get(method, None), label=label,
                      alpha=1.0 if np.isfinite(values).any() else 0.0)
        for rect, v in zip(bars, values, strict=True):
            if np.isfinite(v):
                ax.text(rect.get_x() + rect.get_width() / 2, v + 0.01, f"{v:.2f}", ha="center", va="bottom",
                        fontsize=7)
    ax.set_xticks(x, table.index, fontsize=8)
    ax.set_ylabel("weight (sums to 1 per method)")
    ax.set_ylim(0, max(1.0, float(np.nanmax(table.to_numpy(dtype=float))) + 0.1) if table.size else 1.0)
    ax.legend(fontsize=8)
    ax.set_title(_r07_title("Nominal and fitted weights", subtitle, constructed), fontsize=10)
    return fig


def recal_cv_kappa(per_fold: pd.DataFrame, summary: pd.DataFrame, *, subtitle: str = "",
                   constructed: bool = True) -> Figure:
    """Cross-validated Cohen's kappa per method: each held-out fold a dot (same folds for every method),
    the mean over folds a bar, the pooled kappa of all held-out predictions a black tick. Folds with an
    undefined kappa are not drawn. ``per_fold`` / ``summary``: :class:`CrossValidation`'s tables."""
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    methods = list(summary.index)
    x = np.arange(len(methods))
    means = pd.to_numeric(summary["kappa_mean"], errors="coerce").to_numpy(dtype=float)
    defined = np.isfinite(means)
    ax.bar(x[defined], means[defined], 0.6, alpha=0.35, label="mean over folds",
           color=[RECAL_METHOD_COLOURS.get(m, "#90a4ae") for m, ok in zip(methods, defined, strict=True) if ok])
    for i in np.flatnonzero(~defined):  # an undefined kappa is said, never drawn as a 0-high bar
        _undefined_bar(ax, x[i], "kappa undefined")
    for i, m in enumerate(methods):
        k = pd.to_numeric(per_fold.loc[per_fold["method"] == m, "kappa"], errors="coerce").dropna().to_numpy()
        offsets = np.linspace(-0.2, 0.2, len(k)) if len(k) > 1 else np.zeros(len(k))
        ax.scatter(x[i] + offsets, k, color=RECAL_METHOD_COLOURS.get(m, "#455a64"), s=18, zorder=3,
                   label="held-out fold" if i == 0 else None)
    pooled = pd.to_numeric(summary["kappa_pooled"], errors="coerce").to_numpy(dtype=float)
    ax.scatter(x, pooled, marker="_", s=400, color="black", zorder=4, label="pooled held-out")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, methods, fontsize=8)
    ax.set_ylim(min(-0.1, float(np.nanmin(np.r_[pooled, means, 0.0])) - 0.05), 1.05)
    ax.set_ylabel("Cohen's kappa, band vs labelled verdict")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(_r07_title("Cross-validated agreement (same folds for every method)", subtitle, constructed),
                 fontsize=10)
    return fig


def recal_fabricated(table: pd.DataFrame, rubric: Rubric | None = None, *, subtitle: str = "",
                     constructed: bool = True) -> Figure:
    """Perfect retrieval, fabricated answer (10, 10, 10, 0): its score under each rubric (one bar per row
    of :func:`fabricated_answer_table`, coloured by band), band edges dashed."""
    r = _rubric(rubric)
    fig = Figure(figsize=(8, 3.2), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(table))
    scores = table["score"].to_numpy(dtype=float)
    ax.barh(y, scores, color=[BAND_COLOURS.get(b, "#90a4ae") for b in table["band"]])
    for i, (s, b) in enumerate(zip(scores, table["band"], strict=True)):
        ax.text(s + 1, y[i], f"{s:.1f} {b}", va="center", fontsize=8)
    for edge in (r.bands.partial, r.bands.good):
        ax.axvline(edge, color="black", linestyle="--", linewidth=0.8)
    ax.set_yticks(y, table["rubric"], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.set_xlabel("score of (10, 10, 10, 0), no trajectory cap")
    ax.set_title(_r07_title("Perfect retrieval, fabricated answer", subtitle, constructed), fontsize=10)
    return fig
