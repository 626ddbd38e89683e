"""Figures of an evaluation run (notebook 01, headless runs, the HTML report): scores, dimensions, caps, bands.

Figures count segments, not samples (:func:`axon_eval.summaries.segment_table`); unjudged segments are never
plotted as 0. :func:`save_standard_figures` writes a finished run's ``figures/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator, PercentFormatter

from ..rubric import BANDS, DIMENSIONS, Rubric
from ..summaries import breakdown, cap_table, is_repeated, judged, segment_table, verdict_crosstab
from .style import BAND_COLOURS, _annotate_heatmap, _rubric, _wrapped_title, _title, save_figure

if TYPE_CHECKING:  # pragma: no cover
    from ..runs.load import Run


def _basis(results: pd.DataFrame) -> str:
    """How a repeated run's values are shown, for titles ('' for one sample per segment)."""
    if not is_repeated(results):
        return ""
    per = results.groupby("segment_id", sort=False).size()
    each = f"{per.min()}" if per.min() == per.max() else f"{per.min()}-{per.max()}"
    return f", per-segment mean of {each} samples"


def score_distribution(results: pd.DataFrame, rubric: Rubric | None = None, *, bin_width: float = 5.0,
                       simulated: bool | None = None) -> Figure:
    """Histogram of judged segments' scores (0-100; a repeated run's per-segment means) with the band
    thresholds marked, bars coloured by band."""
    rubric = _rubric(rubric)
    segments = judged(segment_table(results, rubric))
    scores = pd.to_numeric(segments["score"], errors="coerce").dropna().to_numpy()
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    edges = np.arange(0.0, 100.0 + bin_width, bin_width)
    counts, _ = np.histogram(scores, bins=edges)
    lefts = edges[:-1]
    colours = [BAND_COLOURS[rubric.band(float(x))] for x in lefts]
    ax.bar(lefts, counts, width=bin_width, align="edge", color=colours, edgecolor="white")
    for edge, label in ((rubric.bands.partial, "partial"), (rubric.bands.good, "good")):
        ax.axvline(edge, color="black", linestyle="--", linewidth=1)
        # x in data, y as a fraction of the axes: the label stays inside even with no bars at all
        ax.text(edge + 0.5, 0.97, f"{label} >= {edge:g}", va="top", fontsize=8, transform=ax.get_xaxis_transform())
    ax.set_xlim(0, 100)
    ax.set_ylim(0, max(1, int(counts.max()) if counts.size else 1) * 1.08)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("score (out of 100)" + (": mean over the segment's samples" if is_repeated(results) else ""))
    ax.set_ylabel("segments")
    ax.set_title(_title(results, f"Score distribution of {len(scores)} judged segments\n"
                                 f"(rubric {rubric.label}{_basis(results)})", simulated), fontsize=10)
    return fig


def dimension_distributions(results: pd.DataFrame, rubric: Rubric | None = None, *,
                            simulated: bool | None = None) -> Figure:
    """One bar chart per dimension: how many judged segments got each subscore 0-10 (a repeated run's
    per-segment means, counted at the nearest integer), nulls noted."""
    segments = judged(segment_table(results, rubric))
    fig = Figure(figsize=(11, 6), layout="constrained")
    axes = fig.subplots(2, 2, sharey=True)
    edges = np.arange(-0.5, 11.0, 1.0)
    for ax, d in zip(axes.flat, DIMENSIONS, strict=True):
        values = pd.to_numeric(segments[d], errors="coerce") if d in segments.columns else pd.Series(dtype=float)
        counts, _ = np.histogram(values.dropna().clip(0, 10).to_numpy(), bins=edges)
        ax.bar(range(11), counts, color="#546e7a")
        nulls = int(values.isna().sum())
        ax.set_title(d + (f" ({nulls} null: no answer captured)" if nulls else ""), fontsize=10)
        ax.set_xticks(range(11))
        ax.set_xlabel("subscore" + (" (segment mean, nearest integer)" if is_repeated(results) else ""))
    for ax in axes[:, 0]:
        ax.set_ylabel("segments")
    fig.suptitle(_title(results, f"Subscore distribution by dimension (judged segments{_basis(results)})",
                        simulated))
    return fig


def cap_frequencies(results: pd.DataFrame, rubric: Rubric | None = None, *,
                    simulated: bool | None = None) -> Figure:
    """Horizontal bars: how many judged segments had each cap's fact hold (triggered) and how many had it
    lower the score (in at least one sample)."""
    table = cap_table(results, rubric=rubric, allow_mixed=True)
    fig = Figure(figsize=(8, 3.2), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(table))
    ax.barh(y - 0.2, table["triggered"], height=0.4, label="triggered", color="#90a4ae")
    ax.barh(y + 0.2, table["applied"], height=0.4, label="applied (lowered the score)", color="#c62828")
    ax.set_yticks(y, table.index)
    ax.invert_yaxis()
    ax.set_xlabel("judged segments")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(_title(results, "Caps (recovered errors are noted, never penalised)", simulated), fontsize=10)
    return fig


def verdict_band_heatmap(results: pd.DataFrame, rubric: Rubric | None = None, *,
                         simulated: bool | None = None) -> Figure:
    """The judge's own verdict (rows; a repeated run's modal verdict) against the segment's band
    (columns), counts of segments annotated."""
    table = verdict_crosstab(results, rubric=rubric, allow_mixed=True).loc[list(BANDS), list(BANDS)]
    fig = Figure(figsize=(4.8, 4), layout="constrained")
    ax = fig.add_subplot()
    values = table.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=max(float(values.max()), 1.0))
    _annotate_heatmap(ax, image, values, bold_diagonal=True)
    ax.set_xticks(range(len(BANDS)), BANDS)
    ax.set_yticks(range(len(BANDS)), BANDS)
    repeated = is_repeated(results)
    ax.set_xlabel("band (of the " + ("per-segment mean " if repeated else "") + "score)")
    ax.set_ylabel("judge verdict" + (" (modal over samples)" if repeated else ""))
    ax.set_title(_title(results, "Judge verdict vs band (segments)", simulated), fontsize=10)
    return fig


def band_shares_by(results: pd.DataFrame, by: str, rubric: Rubric | None = None, *,
                   simulated: bool | None = None) -> Figure:
    """Stacked bars of good / partial / poor shares of segments per value of ``by`` (region, surface,
    client)."""
    table = breakdown(results, by, rubric=rubric, allow_mixed=True)
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
    ax.xaxis.set_major_locator(FixedLocator([0, 0.25, 0.5, 0.75, 1.0]))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("share of judged segments")
    # below the whole axes, x label included (constrained layout makes room): never over the label
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=len(BANDS), fontsize=8,
               frameon=False)
    ax.set_title(_title(results, f"Bands by {by}{_basis(results)}", simulated), fontsize=10)
    return fig


def score_spread(results: pd.DataFrame, rubric: Rubric | None = None, *, simulated: bool | None = None) -> Figure:
    """Per segment with two or more judged samples: its mean score (x) against the sample SD of its
    scores (y), band edges marked; segments whose band differs across samples in red."""
    rubric = _rubric(rubric)
    segments = judged(segment_table(results, rubric))
    multi = segments.loc[segments["n_judged"] >= 2]
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    varies = multi["band_varies"].to_numpy(dtype=bool)
    ax.scatter(multi["score"].to_numpy()[~varies], multi["score_sd"].to_numpy()[~varies], s=14,
               color="#546e7a", label="same band in every sample")
    ax.scatter(multi["score"].to_numpy()[varies], multi["score_sd"].to_numpy()[varies], s=14,
               color="#c62828", label="band varies across samples")
    for edge in (rubric.bands.partial, rubric.bands.good):
        ax.axvline(edge, color="black", linestyle="--", linewidth=1)
    ax.set_xlim(0, 100)
    ax.set_xlabel("per-segment mean score")
    ax.set_ylabel("SD of the segment's scores (points)")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(_title(results, f"Within-segment spread: {len(multi)} segments with 2+ judged samples,\n"
                                 f"band varies across samples on {int(varies.sum())}", simulated), fontsize=10)
    return fig


def standard_figures(results: pd.DataFrame, rubric: Rubric | None = None, *,
                     simulated: bool | None = None) -> dict[str, Figure]:
    """The headless set of figures by file stem: scores, dimensions, caps, verdict vs band, and, for a
    repeated run, the within-segment spread."""
    figures = {
        "score_distribution": score_distribution(results, rubric, simulated=simulated),
        "dimensions": dimension_distributions(results, rubric, simulated=simulated),
        "caps": cap_frequencies(results, rubric, simulated=simulated),
        "verdict_vs_band": verdict_band_heatmap(results, rubric, simulated=simulated),
    }
    if is_repeated(results):
        figures["score_spread"] = score_spread(results, rubric, simulated=simulated)
    return figures


def save_standard_figures(results: pd.DataFrame, rubric: Rubric | None, folder: str | Path, *,
                          simulated: bool | None = None) -> list[Path]:
    """Write :func:`standard_figures` into ``folder`` as ``<stem>.png``; returns the paths."""
    folder = Path(folder)
    return [save_figure(fig, folder / f"{stem}.png")
            for stem, fig in standard_figures(results, rubric, simulated=simulated).items()]


def band_transition_heatmap(transitions: pd.DataFrame, *, label_a: str = "A", label_b: str = "B",
                            subtitle: str = "", simulated: bool = False) -> Figure:
    """Band transition matrix of two runs (rows: band in A, columns: band in B; counts annotated, the
    diagonal is 'unchanged'). ``transitions``: :attr:`RunComparison.transitions`."""
    table = transitions.reindex(index=list(BANDS), columns=list(BANDS), fill_value=0)
    fig = Figure(figsize=(5.2, 4.4), layout="constrained")
    ax = fig.add_subplot()
    values = table.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=max(float(values.max()), 1.0))
    _annotate_heatmap(ax, image, values, bold_diagonal=False)
    ax.set_xticks(range(len(BANDS)), BANDS)
    ax.set_yticks(range(len(BANDS)), BANDS)
    ax.set_xlabel(f"band under {label_b}")
    ax.set_ylabel(f"band under {label_a}")
    ax.set_title(_wrapped_title("Band transitions", subtitle, simulated, width=60), fontsize=10)
    return fig


def save_run_figures(run: Run) -> list[Path]:
    """Draw a finished run's standard figures (:func:`save_standard_figures`) into its ``figures/`` under the
    run's own rubric (the manifest's record; the default rubric when it has none). Runs draw nothing
    themselves: the CLI, notebook 01 and the calibration layer call this after a run is written."""
    rubric = Rubric.model_validate(run.manifest.rubric) if run.manifest.rubric else None
    return save_standard_figures(run.results, rubric, run.figures_dir)
