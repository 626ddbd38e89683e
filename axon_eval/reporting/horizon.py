"""Figures of notebooks/04_row_horizon.ipynb, drawn from :func:`axon_eval.stats.horizon.horizon_summary`.

Horizons are evenly spaced categories in ascending order with every row (``None``) last, written "all".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .style import SIMULATED_PREFIX


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
