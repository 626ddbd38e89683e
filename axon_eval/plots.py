"""Matplotlib figures of an evaluation's results (used by the notebooks, headless runs and the report).

Every figure function takes the results frame of a run and returns a new
:class:`matplotlib.figure.Figure` built without ``pyplot`` (no global figure state, safe in threads and
headless processes). Save it with :func:`save_figure`; in a notebook, display the saved PNG
(``IPython.display.Image``) so the executed notebook and its HTML export carry exactly the file kept in
the run's ``figures/`` folder. :func:`embed_png` turns a figure (or a saved PNG) into a ``data:`` URI,
which is how the HTML report carries its figures inside the one file.

Figures count **segments**, not samples: a repeated run (several results rows per segment) is plotted
through :func:`axon_eval.summaries.segment_table`, i.e. each segment's mean over its judged samples, and
the title says so. Unjudged segments are never plotted as 0: only judged segments enter the score
figures.

Every figure of a simulated judge (a judge id containing ``noise(`` or ``simulated(``) carries
``SIMULATED`` in its title; ``simulated=None`` (the default) detects it from the results' ``judge_id``
column, ``True``/``False`` states it.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator, PercentFormatter

from .rubric import BANDS, DIMENSIONS, Rubric
from .summaries import (
    breakdown,
    cap_table,
    is_repeated,
    is_simulated_judge,
    judged,
    segment_table,
    verdict_crosstab,
)

BAND_COLOURS = {"good": "#2e7d32", "partial": "#f9a825", "poor": "#c62828"}
#: Prefix of every figure title of a simulated judge.
SIMULATED_PREFIX = "SIMULATED judge: "
#: The first bytes of every PNG file.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _rubric(rubric: Rubric | None) -> Rubric:
    return rubric if rubric is not None else Rubric.default()


def _is_simulated(results: pd.DataFrame, simulated: bool | None) -> bool:
    if simulated is not None:
        return bool(simulated)
    if "judge_id" not in results.columns:
        return False
    return is_simulated_judge(str(v) for v in results["judge_id"].dropna().unique())


def _title(results: pd.DataFrame, text: str, simulated: bool | None) -> str:
    """``text`` prefixed with :data:`SIMULATED_PREFIX` when the judge is simulated."""
    return (SIMULATED_PREFIX if _is_simulated(results, simulated) else "") + text


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


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as PNG at ``path`` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def png_bytes(fig: Figure, *, dpi: int = 110) -> bytes:
    """``fig`` rendered as PNG bytes, in memory."""
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    return buffer.getvalue()


def embed_png(fig_or_path: Figure | str | Path, *, dpi: int = 110) -> str:
    """A ``data:image/png;base64,...`` URI of a figure (rendered in memory) or of a saved PNG file.

    Put it in ``<img src="...">`` and the page carries the picture itself: no file beside it.
    Raises ``ValueError`` naming a file that is not a PNG, ``FileNotFoundError`` for a missing one.
    """
    if isinstance(fig_or_path, Figure):
        data = png_bytes(fig_or_path, dpi=dpi)
    elif isinstance(fig_or_path, str | Path):
        path = Path(fig_or_path)
        data = path.read_bytes()
        if not data.startswith(PNG_SIGNATURE):
            raise ValueError(f"{path} is not a PNG file (first bytes {data[:8]!r})")
    else:
        raise TypeError(f"embed_png takes a matplotlib Figure or a PNG path, got {type(fig_or_path).__name__}")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


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


# -- study 04: row horizon ---------------------------------------------------------------------------------
# Figures of notebooks/04_row_horizon.ipynb. Each takes the per-(sampler, horizon) summary table of
# :func:`axon_eval.stats.horizon.horizon_summary` (columns sampler, horizon, horizon_label, ...). Horizons
# are evenly spaced categories in ascending order with every row (``None``) last, written "all".
#: Text colours a heatmap cell's annotation is chosen from (the one with the higher contrast wins).
CELL_TEXT_COLOURS = ("black", "white")
#: WCAG 2 minimum contrast ratio for normal text (level AA); every heatmap annotation reaches it.
MIN_TEXT_CONTRAST = 4.5
#: What a bar that cannot be computed (an undefined kappa, an empty share) says instead of a 0-height bar.
UNDEFINED_BAR_TEXT = "undefined"


def relative_luminance(colour: object) -> float:
    """WCAG 2 relative luminance of a colour (any matplotlib colour spec), in [0, 1]:
    ``L = 0.2126 R + 0.7152 G + 0.0722 B`` over the linearised channels
    ``c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4`` (W3C, WCAG 2.1, "relative luminance")."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_ratio(a: object, b: object) -> float:
    """WCAG 2 contrast ratio ``(L_light + 0.05) / (L_dark + 0.05)`` of two colours, in [1, 21]."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def cell_text_colour(background: object) -> str:
    """Black or white, whichever contrasts more with ``background`` (:func:`contrast_ratio`)."""
    return max(CELL_TEXT_COLOURS, key=lambda c: contrast_ratio(c, background))


def _annotate_heatmap(ax: object, image: object, values: np.ndarray, *, bold_diagonal: bool | None = None,
                      fontsize: float | None = None) -> None:
    """Write each cell's count over the heatmap ``image``, in the colour that reads on that cell.

    ``bold_diagonal``: True bolds the agreeing cells, False bolds the non-empty off-diagonal ones (the
    changes), None bolds nothing."""
    for i in range(values.shape[0]):
        for k in range(values.shape[1]):
            v = values[i, k]
            bold = (bold_diagonal is True and i == k) or (bold_diagonal is False and i != k and v)
            ax.text(k, i, str(int(v)), ha="center", va="center", fontsize=fontsize,
                    color=cell_text_colour(image.cmap(image.norm(v))), fontweight="bold" if bold else "normal")


def _undefined_bar(ax: object, x: float, text: str = UNDEFINED_BAR_TEXT) -> None:
    """Mark a bar that has no value (NaN) at ``x`` with a word instead of drawing it 0 high."""
    ax.text(x, 0.02, text, transform=ax.get_xaxis_transform(), ha="center", va="bottom", rotation=90,
            fontsize=8, color="#555555")


HORIZON_SAMPLER_STYLES = {"head": {"color": "#1f77b4", "marker": "o"},
                          "evidence": {"color": "#d62728", "marker": "s"}}


def _h04_horizons(summary: pd.DataFrame) -> list[str]:
    """The horizon labels of ``summary`` in plotting order: ascending integers, then "all"."""
    values = {None if pd.isna(h) else int(h) for h in summary["horizon"]}
    return [str(h) for h in sorted(v for v in values if v is not None)] + (["all"] if None in values else [])


def _h04_label(h: object) -> str:
    return "all" if h is None or pd.isna(h) else str(int(h))


def _h04_lines(ax: object, summary: pd.DataFrame, column: str, order: list[str], **style_over: object) -> None:
    """One line per sampler of ``column`` against the horizon categories of ``order``."""
    position = {label: i for i, label in enumerate(order)}
    for k, (sampler, part) in enumerate(summary.groupby("sampler", sort=False)):
        style = dict(HORIZON_SAMPLER_STYLES.get(str(sampler), {"marker": "^"}))
        style.update(style_over)
        xs = [position[_h04_label(h)] for h in part["horizon"]]
        ys = pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float)
        idx = np.argsort(xs)
        ax.plot(np.asarray(xs)[idx], ys[idx], label=str(sampler), linewidth=1.6, markersize=5, **style)
    ax.set_xticks(range(len(order)), order)
    ax.set_xlabel("rows shown per statement (horizon; 0 = counts only)")
    ax.grid(True, alpha=0.3)


def _h04_title(text: str, simulated: bool) -> str:
    return (SIMULATED_PREFIX if simulated else "") + text


def horizon_curves(summary: pd.DataFrame, *, simulated: bool = False) -> Figure:
    """Three panels against the horizon, one line per sampler: band agreement with the all-rows band;
    seeded defects beyond the horizon that are caught (solid) out of those beyond it (dashed grey, the
    same for every sampler); correct answers wrongly penalised."""
    order = _h04_horizons(summary)
    fig = Figure(figsize=(13, 4), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    _h04_lines(a, summary, "band_agreement", order)
    a.set_ylim(0, 1.05)
    a.set_ylabel("share of segments")
    a.set_title("band agrees with the all-rows band", fontsize=10)
    _h04_lines(b, summary, "defects_caught", order)
    beyond = summary.drop_duplicates("horizon_label").set_index("horizon_label")["defects_beyond"]
    b.plot(range(len(order)), [beyond.get(h, np.nan) for h in order], color="grey", linestyle="--",
           linewidth=1, label="beyond the horizon")
    b.set_ylabel("seeded defects")
    b.set_title("defects beyond the horizon: caught", fontsize=10)
    b.yaxis.set_major_locator(MaxNLocator(integer=True))
    _h04_lines(c, summary, "correct_penalised", order)
    c.set_ylabel("correct answers")
    c.set_title("correct answers wrongly penalised", fontsize=10)
    c.yaxis.set_major_locator(MaxNLocator(integer=True))
    c.set_ylim(bottom=0)
    b.set_ylim(bottom=0)
    for ax in (a, b, c):
        ax.legend(fontsize=8)
    n = int(summary["n_segments"].max()) if "n_segments" in summary and len(summary) else 0
    title = _h04_title(f"Row horizon: what each sampler shows the judge ({n} segments, constructed labels)", simulated)
    note = horizon_unjudged_note(summary)
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=11)
    return fig


def horizon_unjudged_note(summary: pd.DataFrame) -> str:
    """The sentence a horizon figure carries when some judgements are missing (``defects_unjudged`` /
    ``correct_unjudged`` of :func:`axon_eval.stats.horizon.horizon_summary`), else ``""``: unjudged items
    are not drawn as caught, missed or penalised."""
    parts = []
    for column, what in (("defects_unjudged", "seeded defect(s) beyond the horizon"),
                         ("correct_unjudged", "correct answer(s)")):
        if column in summary.columns:
            total = int(pd.to_numeric(summary[column], errors="coerce").fillna(0).sum())
            if total:
                parts.append(f"{total} {what}")
    if not parts:
        return ""
    return ("NOT JUDGED (summed over the horizons): " + " and ".join(parts)
            + "; left out of caught, missed and penalised")


def horizon_prompt_size(summary: pd.DataFrame, *, simulated: bool = False) -> Figure:
    """Mean prompt size per segment against the horizon, one line per sampler (log scale): characters
    of the rendered view, and input tokens (exact from the judge records, or the stated estimate; the
    axis says which)."""
    order = _h04_horizons(summary)
    estimated = bool(summary["input_tokens_estimated"].fillna(True).astype(bool).any()) \
        if "input_tokens_estimated" in summary else True
    fig = Figure(figsize=(11, 4), layout="constrained")
    a, b = fig.subplots(1, 2)
    _h04_lines(a, summary, "mean_chars", order)
    a.set_ylabel("characters of the view (mean per segment)")
    a.set_title("prompt size: characters", fontsize=10)
    _h04_lines(b, summary, "mean_input_tokens", order)
    b.set_ylabel("input tokens (mean per segment)")
    b.set_title("prompt size: input tokens, " + ("ESTIMATED as characters / 4" if estimated
                                                 else "exact from the judge records"), fontsize=10)
    for ax in (a, b):
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.suptitle(_h04_title("Row horizon: the cost of seeing more rows", simulated), fontsize=11)
    return fig


def horizon_delta_vs_size(summary: pd.DataFrame, *, simulated: bool = False) -> Figure:
    """Mean |score delta| against the all-rows score (points) against mean characters per segment (log
    scale), one line per sampler, each point labelled with its horizon."""
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for sampler, part in summary.groupby("sampler", sort=False):
        style = HORIZON_SAMPLER_STYLES.get(str(sampler), {"marker": "^"})
        part = part.sort_values("mean_chars")
        ax.plot(part["mean_chars"].to_numpy(dtype=float), part["mean_abs_score_delta"].to_numpy(dtype=float),
                label=str(sampler), linewidth=1.6, markersize=5, **style)
        for x, y, h in zip(part["mean_chars"], part["mean_abs_score_delta"], part["horizon"]):
            if pd.notna(x) and pd.notna(y):
                ax.annotate(_h04_label(h), (float(x), float(y)), textcoords="offset points", xytext=(4, 4),
                            fontsize=7, color=style.get("color", "black"))
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("characters of the view (mean per segment, log scale)")
    ax.set_ylabel("mean |score - all-rows score| (points)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_h04_title("Score delta against prompt size (points labelled with the horizon)", simulated),
                 fontsize=10)
    return fig


# -- study 02: weight sensitivity ---------------------------------------------------------------------
# Figures of notebooks/02_weight_sensitivity.ipynb, drawn from the records and tables of
# axon_eval.stats.sensitivity (no scoring here). ``subtitle`` is a second title line (which run, how
# many segments, which judge); ``simulated=True`` prefixes SIMULATED_PREFIX.
WEIGHT_COLOURS = {"intent_understood": "#1565c0", "sql_quality": "#6a1b9a", "result_relevance": "#00838f",
                  "answer_faithfulness": "#ef6c00"}


def _s02_title(text: str, subtitle: str, simulated: bool, width: int = 80) -> str:
    """``text`` (SIMULATED-prefixed when simulated) with ``subtitle`` wrapped under it at ``width`` characters."""
    import textwrap

    lines = textwrap.wrap(subtitle, width=width) if subtitle else []
    return "\n".join([(SIMULATED_PREFIX if simulated else "") + text, *lines])


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
    ax.set_title(_s02_title("One weight at a time: largest score change per step", subtitle, simulated),
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
    ax.set_title(_s02_title(f"Exact score range of each segment for weights within d = {d:g} of nominal",
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
    ax.set_title(_s02_title("Band changes against perturbation size", subtitle, simulated), fontsize=10)
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
    ax.set_title(_s02_title(f"Who changes band (d = {d:g}): flips against distance to a band edge",
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
    fig.suptitle(_s02_title("Sobol indices of the four weights", subtitle, simulated), fontsize=10)
    return fig


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
    ax.set_title(_s02_title("Band transitions", subtitle, simulated, width=60), fontsize=10)
    return fig


# -- study 03: judge noise ---------------------------------------------------------------------------------
# Figures of axon_eval.stats.noise results (a JudgeNoiseSummary's parts). Each takes ``simulated``: True
# puts NOISE_SIMULATED_PREFIX at the start of the figure title. Save them with save_titled_figure so the
# PNG carries its title in its metadata.
NOISE_SIMULATED_PREFIX = "SIMULATED: "
_NOISE_COLOURS = {"mean": "#1565c0", "median": "#6a1b9a"}


def _noise_title(fig: Figure, text: str, simulated: bool) -> str:
    title = (NOISE_SIMULATED_PREFIX if simulated else "") + text
    fig.suptitle(title, fontsize=10)
    return title


def _nan_note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="#555555", wrap=True)


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
    left.set_xlabel(f"within-segment SD (subscore points); score SD {score_sd:.2f} of 100" if np.isfinite(score_sd)
                    else "within-segment SD (subscore points); score SD n/a")
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
    right.set_xlabel("ICC(1,1) (1: all of a judgement's variance is between segments)")
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


def figure_title(fig: Figure) -> str:
    """A figure's title: its suptitle, else its axes' titles joined by ' | '."""
    return fig.get_suptitle() or " | ".join(ax.get_title() for ax in fig.axes if ax.get_title())


def save_titled_figure(fig: Figure, path: str | Path, *, dpi: int = 110) -> Path:
    """:func:`save_figure` with the figure's title (:func:`figure_title`) in the PNG's ``Title`` metadata."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png", metadata={"Title": figure_title(fig)})
    return path


# -- study 07: weight recalibration -------------------------------------------------------------------
# Figures of notebooks/07_weight_recalibration.ipynb, drawn from the tables of
# axon_eval.stats.recalibration (no fitting or scoring here). Every title says the labels are constructed
# when ``constructed=True`` (the offline default): the fitted weights are not to be adopted.
RECAL_METHOD_COLOURS = {"nominal": "#616161", "least_squares": "#1565c0", "ordinal": "#6a1b9a",
                        "axon-v1-faithcap": "#ef6c00", "axon-v1-faithpartial": "#2e7d32"}
RECAL_CONSTRUCTED = "CONSTRUCTED labels, not human judgements: do not adopt these weights"


def _r07_title(text: str, subtitle: str, constructed: bool) -> str:
    """``text`` on the first line, the constructed-labels warning on the second, ``subtitle`` below."""
    head = f"{text}\n{RECAL_CONSTRUCTED}" if constructed else text
    return _s02_title(head, subtitle, False, width=90)


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


# -- study 06: judge drift ---------------------------------------------------------------------------------
# Figures of axon_eval.stats.drift records (a JudgeDrift's parts): candidate judge minus anchor judge on
# the anchor's evidence. ``subtitle`` names the candidate, the anchor and n; ``simulated=True`` prefixes
# SIMULATED_PREFIX (a simulated candidate). Save them with save_titled_figure.
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
    ax.set_title(_s02_title("Bland-Altman: candidate judge against the anchor", subtitle, simulated), fontsize=10)
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
    ax.set_title(_s02_title("Per-segment score differences", subtitle, simulated), fontsize=10)
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
    ax.set_title(_s02_title("Per-dimension drift", subtitle, simulated), fontsize=10)
    return fig


# -- study 05: calibration ---------------------------------------------------------------------------------
# Figures of axon_eval.stats.agreement.CalibrationAgreement parts: the judge against human labels.
# ``note`` goes under every title; with constructed labels it must say they are CONSTRUCTED, not human.
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
