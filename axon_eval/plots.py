"""Matplotlib figures of an evaluation's results (used by the notebooks and headless runs).

Every function takes the results frame of a run and returns a new :class:`matplotlib.figure.Figure`
built without ``pyplot`` (no global figure state, safe in threads and headless processes). Save it with
:func:`save_figure`; in a notebook, display the saved PNG (``IPython.display.Image``) so the executed
notebook and its HTML export carry exactly the file kept in the run's ``figures/`` folder.

Unjudged rows are never plotted as 0: only ``status == "judged"`` rows enter the score figures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .rubric import BANDS, DIMENSIONS, Rubric
from .summaries import breakdown, cap_table, judged, verdict_crosstab

BAND_COLOURS = {"good": "#2e7d32", "partial": "#f9a825", "poor": "#c62828"}


def _rubric(rubric: Rubric | None) -> Rubric:
    return rubric if rubric is not None else Rubric.default()


def score_distribution(results: pd.DataFrame, rubric: Rubric | None = None, *, bin_width: float = 5.0) -> Figure:
    """Histogram of judged scores (0-100) with the band thresholds marked, bars coloured by band."""
    rubric = _rubric(rubric)
    scores = pd.to_numeric(judged(results)["score"], errors="coerce").dropna().to_numpy()
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    edges = np.arange(0.0, 100.0 + bin_width, bin_width)
    counts, _ = np.histogram(scores, bins=edges)
    lefts = edges[:-1]
    colours = [BAND_COLOURS[rubric.band(float(x))] for x in lefts]
    ax.bar(lefts, counts, width=bin_width, align="edge", color=colours, edgecolor="white")
    for edge, label in ((rubric.bands.partial, "partial"), (rubric.bands.good, "good")):
        ax.axvline(edge, color="black", linestyle="--", linewidth=1)
        ax.text(edge + 0.5, ax.get_ylim()[1] * 0.95 if counts.size and counts.max() else 0.95,
                f"{label} >= {edge:g}", va="top", fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("score (out of 100)")
    ax.set_ylabel("segments")
    ax.set_title(f"Score distribution ({len(scores)} judged segments, rubric {rubric.label})")
    return fig


def dimension_distributions(results: pd.DataFrame) -> Figure:
    """One bar chart per dimension: how many judged segments got each subscore 0-10 (nulls noted)."""
    j = judged(results)
    fig = Figure(figsize=(11, 6), layout="constrained")
    axes = fig.subplots(2, 2, sharey=True)
    for ax, d in zip(axes.flat, DIMENSIONS, strict=True):
        values = pd.to_numeric(j[d], errors="coerce")
        counts = values.dropna().round().astype(int).value_counts().reindex(range(11), fill_value=0)
        ax.bar(counts.index, counts.to_numpy(), color="#546e7a")
        nulls = int(values.isna().sum())
        ax.set_title(d + (f" ({nulls} null: no answer captured)" if nulls else ""), fontsize=10)
        ax.set_xticks(range(11))
        ax.set_xlabel("subscore")
    for ax in axes[:, 0]:
        ax.set_ylabel("segments")
    fig.suptitle("Subscore distribution by dimension (judged segments)")
    return fig


def cap_frequencies(results: pd.DataFrame) -> Figure:
    """Horizontal bars: how often each cap's fact held (triggered) and how often it lowered the score."""
    table = cap_table(results, allow_mixed=True)
    fig = Figure(figsize=(8, 3.2), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(table))
    ax.barh(y - 0.2, table["triggered"], height=0.4, label="triggered", color="#90a4ae")
    ax.barh(y + 0.2, table["applied"], height=0.4, label="applied (lowered the score)", color="#c62828")
    ax.set_yticks(y, table.index)
    ax.invert_yaxis()
    ax.set_xlabel("judged segments")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Caps (recovered errors are noted, never penalised)")
    return fig


def verdict_band_heatmap(results: pd.DataFrame) -> Figure:
    """The judge's own verdict (rows) against the scored band (columns), counts annotated."""
    table = verdict_crosstab(results, allow_mixed=True).loc[list(BANDS), list(BANDS)]
    fig = Figure(figsize=(4.8, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.imshow(table.to_numpy(), cmap="Blues")
    for i in range(len(BANDS)):
        for k in range(len(BANDS)):
            ax.text(k, i, str(int(table.iat[i, k])), ha="center", va="center")
    ax.set_xticks(range(len(BANDS)), BANDS)
    ax.set_yticks(range(len(BANDS)), BANDS)
    ax.set_xlabel("band (from the score)")
    ax.set_ylabel("judge verdict")
    ax.set_title("Judge verdict vs band")
    return fig


def band_shares_by(results: pd.DataFrame, by: str) -> Figure:
    """Stacked bars of good / partial / poor shares per value of ``by`` (region, surface, client)."""
    table = breakdown(results, by, allow_mixed=True)
    fig = Figure(figsize=(7, 0.5 + 0.45 * max(len(table), 1) + 1), layout="constrained")
    ax = fig.add_subplot()
    left = np.zeros(len(table))
    labels = [str(i) for i in table.index]
    for b in BANDS:
        share = table[f"share_{b}"].fillna(0).to_numpy()
        ax.barh(labels, share, left=left, color=BAND_COLOURS[b], label=b)
        left += share
    for i, (n, u) in enumerate(zip(table["judged"], table["unjudged"], strict=True)):
        ax.text(1.01, i, f"n={n}" + (f", {u} unjudged" if u else ""), va="center", fontsize=8)
    ax.set_xlim(0, 1.25)
    ax.set_xlabel("share of judged segments")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=len(BANDS), fontsize=8, frameon=False)
    ax.set_title(f"Bands by {by}")
    return fig


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as PNG at ``path`` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def save_standard_figures(results: pd.DataFrame, rubric: Rubric | None, folder: str | Path) -> list[Path]:
    """Write the headless set of figures into ``folder``: scores, dimensions, caps, verdict vs band."""
    folder = Path(folder)
    made = [
        save_figure(score_distribution(results, rubric), folder / "score_distribution.png"),
        save_figure(dimension_distributions(results), folder / "dimensions.png"),
        save_figure(cap_frequencies(results), folder / "caps.png"),
        save_figure(verdict_band_heatmap(results), folder / "verdict_vs_band.png"),
    ]
    return made
